import FeedStorage

/// The feed core's metric names (feeds, the store, the server's connections), their `# HELP` text and the
/// buckets of every DiffStream histogram. Families' names are hosting's (`FamilyMetricName`), the request
/// timer's the HTTP API's (`HTTPMetricName`); `/metrics` joins the three lists into one.
public enum MetricName {
    // Histograms recorded as things happen.
    /// From a batch's broadcast to its write to the last subscriber.
    public static let publishToLastWrite = "diffstream_publish_to_last_write_seconds"
    /// Time spent diffing snapshots.
    public static let diff = "diffstream_diff_seconds"
    /// A store commit, from its start to its fsync's end (recorded by FeedStore under this name).
    public static let storeCommit = StoreMetrics.commitDurationLabel

    /// `# HELP` texts by name: the feeds', the store's and the server's. Hosting (`FamilyMetricName`) and
    /// the HTTP API (`HTTPMetricName`) keep their own beside their metrics; `/metrics` serves the union
    /// (`MetricsEndpoint.help`). The names and texts that existed before swift-metrics are unchanged.
    package static let help: [String: String] = [
        "diffstream_connections_open": "Open client connections.",
        "diffstream_connections_accepted_total": "Connections accepted.",
        "diffstream_connections_refused_total": "Connections refused at the connection cap.",
        "diffstream_connections_refused_per_ip_total": "Connections refused at the per-address cap (--max-connections-per-ip).",
        "diffstream_requests_total": "Requests answered.",
        "diffstream_bad_requests_total": "Requests refused by the parser.",
        "diffstream_timeouts_total": "Connections closed by a timeout.",
        "diffstream_bytes_sent_total": "Bytes written to sockets.",
        "diffstream_event_streams_open": "Open event streams.",
        "diffstream_events_sent_total": "Events queued to event streams.",
        "diffstream_stream_overflows_total": "Event streams that fell behind their buffer limit.",
        "diffstream_loop_connections_open": "Open client connections on each event loop.",
        "diffstream_feed_subscribers": "Open event streams per feed.",
        "diffstream_feed_batches_total": "Batches published per feed.",
        "diffstream_family_subscribers": "Open event streams on the live members of each family.",
        "diffstream_family_batches_total": "Batches published on the members of each family.",
        "diffstream_diff_seconds": "Time spent diffing snapshots.",
        "diffstream_resyncs_total": "Slow subscribers caught up with a fresh snapshot.",
        "diffstream_store_commits_total": "Store commits (one fsync each).",
        "diffstream_store_writes_total": "Writes made durable; divided by commits, the writes per commit.",
        "diffstream_store_writes_per_commit": "Average writes per commit (group commit).",
        "diffstream_store_writes_per_commit_max": "Most writes in one commit.",
        "diffstream_store_failed_commits_total": "Commits that failed (full disk, I/O error).",
        "diffstream_store_commit_seconds": "Time from a commit's start to its fsync's end.",
        "diffstream_store_size_bytes": "Bytes of the store's files on disk.",
        "diffstream_store_compactions_total": "Checkpoints written to compact the store's log.",
        "diffstream_store_failed_compactions_total": "Compactions that failed (tried again later).",
        "diffstream_feeds": "Feeds counted against --max-feeds (view-model feeds are not).",
        "diffstream_store_bytes": "Encoded bytes of all snapshots and replay windows.",
        "diffstream_max_feeds": "The --max-feeds limit.",
        "diffstream_max_feed_bytes": "The --max-feed-bytes limit.",
        "diffstream_max_store_bytes": "The --max-store-bytes limit.",
        "diffstream_storage_refusals_total": "Writes refused with 507, per limit.",
        publishToLastWrite: "Time from a batch's broadcast to its write to the last subscriber's socket.",
    ]

    /// Labelled families `/metrics` declares (`# HELP`, `# TYPE`) even before their first series.
    package static let alwaysDeclared: [(name: String, type: String)] = [
        ("diffstream_feed_subscribers", "gauge"), ("diffstream_feed_batches_total", "counter"),
    ]

    /// Buckets of DiffStream's histograms: 100 µs to 10 s.
    package static let buckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2.5), .seconds(10),
    ]
}

/// One value of a metric, labelled, as DiffStream publishes it.
package struct MetricSample: Sendable {
    package enum Kind: Sendable { case counter, gauge }
    package var name: String
    package var labels: [(String, String)] = []
    package var value: Double
    package var kind: Kind

    package init(name: String, labels: [(String, String)] = [], value: Double, kind: Kind) {
        self.name = name
        self.labels = labels
        self.value = value
        self.kind = kind
    }
}
