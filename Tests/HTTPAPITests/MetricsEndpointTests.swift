import CoreMetrics
import FeedCore
import HTTPAPI
import ViewModelHosting
import EpollRuntime
import Logging
import Testing

/// `/metrics` through swift-metrics and swift-prometheus. The tests of this process share one
/// bootstrapped registry, so they look for names and labels, not for values.
struct MetricsEndpointTests {
    /// The names and `# HELP` texts that existed before swift-metrics (dashboards depend on them).
    static let existing: [(name: String, help: String)] = [
        ("diffstream_connections_open", "Open client connections."),
        ("diffstream_connections_accepted_total", "Connections accepted."),
        ("diffstream_connections_refused_total", "Connections refused at the connection cap."),
        ("diffstream_connections_refused_per_ip_total", "Connections refused at the per-address cap (--max-connections-per-ip)."),
        ("diffstream_requests_total", "Requests answered."),
        ("diffstream_bad_requests_total", "Requests refused by the parser."),
        ("diffstream_timeouts_total", "Connections closed by a timeout."),
        ("diffstream_bytes_sent_total", "Bytes written to sockets."),
        ("diffstream_event_streams_open", "Open event streams."),
        ("diffstream_events_sent_total", "Events queued to event streams."),
        ("diffstream_stream_overflows_total", "Event streams that fell behind their buffer limit."),
        ("diffstream_loop_connections_open", "Open client connections on each event loop."),
        ("diffstream_feed_subscribers", "Open event streams per feed."),
        ("diffstream_feed_batches_total", "Batches published per feed."),
        ("diffstream_diff_seconds", "Time spent diffing snapshots."),
        ("diffstream_resyncs_total", "Slow subscribers caught up with a fresh snapshot."),
        ("diffstream_store_commits_total", "Store commits (one fsync each)."),
        ("diffstream_store_writes_total", "Writes made durable; divided by commits, the writes per commit."),
        ("diffstream_store_writes_per_commit", "Average writes per commit (group commit)."),
        ("diffstream_store_writes_per_commit_max", "Most writes in one commit."),
        ("diffstream_store_failed_commits_total", "Commits that failed (full disk, I/O error)."),
        ("diffstream_store_size_bytes", "Bytes of the store's files on disk."),
        ("diffstream_store_compactions_total", "Checkpoints written to compact the store's log."),
        ("diffstream_store_failed_compactions_total", "Compactions that failed (tried again later)."),
        ("diffstream_feeds", "Feeds counted against --max-feeds (view-model feeds are not)."),
        ("diffstream_store_bytes", "Encoded bytes of all snapshots and replay windows."),
        ("diffstream_max_feeds", "The --max-feeds limit."),
        ("diffstream_max_feed_bytes", "The --max-feed-bytes limit."),
        ("diffstream_max_store_bytes", "The --max-store-bytes limit."),
        ("diffstream_storage_refusals_total", "Writes refused with 507, per limit."),
    ]

    /// An API over a server that is never started (its counters exist; nothing is bound) and a store.
    static func api() throws -> FeedAPI {
        let server = try HTTPServer(configuration: .init(port: 0, loops: 2, logger: Logger(label: "test") { SwiftLogNoOpLogHandler($0) }))
        let registry = FeedRegistry(store: MemoryStore())
        return FeedAPI(registry: registry, hosted: nil, files: nil, options: .init(), serverMetrics: { server.metrics })
    }

    static func metricsText(_ api: FeedAPI) async throws -> String {
        let response = await api.handle(HTTPRequest(method: "GET", target: "/metrics", headers: ["Host": "x"]))
        #expect(response.status == .ok)
        guard case .bytes(let bytes) = response.body else { throw APIError(.internalServerError, "stream", "not a body") }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func everyExistingNameIsServedWithItsHelpLine() async throws {
        let api = try Self.api()
        for body in [#"{"sections":[]}"#, #"{"sections":[{"id":"s"}]}"#] {  // a feed and a batch: its subscribers and batches
            let put = await api.handle(HTTPRequest(method: "PUT", target: "/feeds/m", headers: ["Host": "x", "Content-Type": "application/json"], body: Array(body.utf8)))
            #expect(put.status.code < 300)
        }
        let text = try await Self.metricsText(api)
        for (name, help) in Self.existing {
            #expect(text.contains("# HELP \(name) \(help)\n"), "\(name)")
        }
        #expect(text.contains("diffstream_loop_connections_open{loop=\"1\"}"))
        #expect(text.contains("diffstream_feed_batches_total{feed=\"m\"}"))
        #expect(text.contains("diffstream_storage_refusals_total{limit=\"max-feeds\"} 0"))
        #expect(text.contains("# TYPE diffstream_diff_seconds histogram\n") && text.contains("diffstream_diff_seconds_count "))
        #expect(text.contains("# HELP diffstream_store_commit_seconds Time from a commit's start to its fsync's end.\n# TYPE diffstream_store_commit_seconds histogram\n"))
    }

    @Test func perFeedFamiliesAreDeclaredBeforeTheirFirstSeries() async throws {
        let text = try await Self.metricsText(try Self.api())
        #expect(text.contains("# HELP diffstream_feed_batches_total Batches published per feed.\n# TYPE diffstream_feed_batches_total counter\n"))
        #expect(text.contains("# TYPE diffstream_feed_subscribers gauge\n"))
    }

    @Test(arguments: [
        ("/feeds/some-feed", "/feeds/{feed}"), ("/feeds/other/events", "/feeds/{feed}/events"),
        ("/feeds/third/actions/go", "/feeds/{feed}/actions/{action}"), ("/healthz", "/healthz"), ("/a/file.css", "/{path...}"),
    ])
    func requestDurationsAreLabelledWithTheRoutePattern(target: String, pattern: String) async throws {
        let api = try Self.api()
        let response = await api.handle(HTTPRequest(method: "GET", target: target + "?token=secret", headers: ["Host": "x"]))
        let text = try await Self.metricsText(api)
        #expect(text.contains("# HELP diffstream_http_request_duration_seconds "))
        #expect(text.contains("diffstream_http_request_duration_seconds_count{route=\"\(pattern)\",status=\"\(response.status.code)\"} "))
        #expect(target == pattern || !text.contains("route=\"\(target)"))  // never a raw path
        #expect(!text.contains("secret"))
    }

    @Test func aProgramsOwnCounterShowsUp() async throws {
        let api = try Self.api()  // bootstraps swift-metrics, unless a test before did
        CoreMetrics.Counter(label: "scoreboard_goals_total", dimensions: [("team", "home")]).increment(by: 3)
        let text = try await Self.metricsText(api)
        #expect(text.contains("scoreboard_goals_total{team=\"home\"} "))
        #expect(api.metrics.registry != nil)
    }
}
