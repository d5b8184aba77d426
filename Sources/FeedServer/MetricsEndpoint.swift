import CoreMetrics
import FeedStorage
import HTTPCore
import Prometheus
import Synchronization

/// DiffStream's metrics, sent through swift-metrics, and the Prometheus registry `/metrics` renders.
///
/// The order that decides where metrics go (see docs/architecture.md, "Metrics"):
/// 1. The program bootstrapped `MetricsSystem` itself before the endpoint is made: DiffStream's metrics go
///    to that backend, and `/metrics` serves only the registry the program hands in (404 without one).
/// 2. Otherwise the first endpoint of the process bootstraps `MetricsSystem` with a
///    `PrometheusCollectorRegistry` (the handed one, or a new one), so every swift-metrics metric of the
///    program, a view model's own `Counter` included, shows up on `/metrics`.
///
/// Make the endpoint before anything of DiffStream's or the program's records a metric: a swift-metrics
/// metric made before the bootstrap stays with the no-op backend.
public final class MetricsEndpoint: Sendable {
    /// The registry `/metrics` renders; nil when the program bootstrapped its own backend and handed none.
    public let registry: PrometheusCollectorRegistry?
    /// The counters and gauges pushed so far (taken only when metrics are published, never per event).
    private let mirror = Mutex(Mirror())

    /// An endpoint serving `registry`, or the registry DiffStream bootstraps swift-metrics with.
    /// The program bootstrapped swift-metrics with a backend of its own: DiffStream's counters and
    /// gauges reach it only when published (``FeedAPI/publishMetrics()``; `Server` does so
    /// periodically), not when `/metrics` renders.
    public let feedsProgramBackend: Bool

    public init(registry handed: PrometheusCollectorRegistry? = nil) {
        registry = MetricsBootstrap.registry(handing: handed)
        feedsProgramBackend = !(MetricsSystem.factory is DescribedPrometheusFactory)
        // Registered at once, so that `/metrics` shows them (empty) before the first diff or batch.
        _ = CoreMetrics.Timer(label: MetricName.diff)
        _ = CoreMetrics.Timer(label: MetricName.publishToLastWrite)
    }

    /// `/metrics`'s body: publishes DiffStream's counters and gauges, then renders the registry (nil
    /// when there is no registry to serve).
    func render(server: ServerMetrics?, feeds: FeedMetrics, storage: StorageAccount) -> [UInt8]? {
        publish(server: server, feeds: feeds, storage: storage)
        guard let registry else { return nil }
        var bytes = registry.emitToBuffer()
        // The registry drops a family with no series; these are declared even then (a feed's first
        // batch or subscriber adds the first sample), as they always were.
        let text = String(decoding: bytes, as: UTF8.self)
        for (name, type) in MetricName.alwaysDeclared where !text.contains("# TYPE \(name) ") {
            bytes += Array("# HELP \(name) \(MetricName.help[name] ?? "")\n# TYPE \(name) \(type)\n".utf8)
        }
        return bytes
    }

    /// Pushes the values DiffStream keeps in its own counters (cheap on the hot paths: per-loop atomics,
    /// per-feed tallies) to swift-metrics: gauges are set, counters advanced by what they gained since
    /// the last push.
    func publish(server: ServerMetrics?, feeds: FeedMetrics, storage: StorageAccount) {
        var samples = server.map(Self.samples(of:)) ?? []
        samples += feeds.samples()
        samples += storage.samples()
        let hasStore = feeds.store != nil
        mirror.withLock { mirror in
            if hasStore && !mirror.commitTimerRegistered {  // shown (empty) before the first commit, as it always was
                _ = CoreMetrics.Timer(label: MetricName.storeCommit)
                mirror.commitTimerRegistered = true
            }
            mirror.push(samples)
        }
    }

    static func samples(of server: ServerMetrics) -> [MetricSample] {
        server.values.map { MetricSample(name: $0.name, labels: $0.labels, value: Double($0.value), kind: $0.isGauge ? .gauge : .counter) }
    }
}

/// One value of a metric, labelled, as DiffStream publishes it.
struct MetricSample: Sendable {
    enum Kind: Sendable { case counter, gauge }
    var name: String
    var labels: [(String, String)] = []
    var value: Double
    var kind: Kind
}

/// The swift-metrics handles DiffStream's samples are pushed through, by series.
private struct Mirror: Sendable {
    var counters: [String: (counter: CoreMetrics.Counter, pushed: Int64)] = [:]
    var gauges: [String: CoreMetrics.Gauge] = [:]
    /// The store's commit timer has been made (it is recorded in FeedStore, from the first commit on).
    var commitTimerRegistered = false

    mutating func push(_ samples: [MetricSample]) {
        var current = Set<String>()
        for sample in samples {
            let key = sample.name + "{" + sample.labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
            switch sample.kind {
            case .counter:
                let value = Int64(sample.value)
                let entry = counters[key] ?? (CoreMetrics.Counter(label: sample.name, dimensions: sample.labels), 0)
                if value > entry.pushed { entry.counter.increment(by: value - entry.pushed) }
                counters[key] = (entry.counter, max(entry.pushed, value))
            case .gauge:
                current.insert(key)
                let gauge = gauges[key] ?? CoreMetrics.Gauge(label: sample.name, dimensions: sample.labels)
                gauges[key] = gauge
                gauge.record(sample.value)
            }
        }
        for (key, gauge) in gauges where !current.contains(key) {  // a deleted feed's gauge goes
            gauge.destroy()
            gauges[key] = nil
        }
    }
}

/// Bootstraps swift-metrics once per process, unless the program did.
enum MetricsBootstrap {
    /// The registry DiffStream bootstrapped swift-metrics with, once it has.
    private static let ours = Mutex<PrometheusCollectorRegistry?>(nil)

    static func registry(handing handed: PrometheusCollectorRegistry?) -> PrometheusCollectorRegistry? {
        ours.withLock { ours in
            if let ours { return handed ?? ours }
            guard MetricsSystem.factory is NOOPMetricsHandler else { return handed }  // the program's own backend
            let registry = handed ?? PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(DescribedPrometheusFactory(registry: registry))
            ours = registry
            return registry
        }
    }
}

/// DiffStream's metric names, their `# HELP` text and, for histograms, their buckets: the one list.
public enum MetricName {
    // Histograms recorded as things happen.
    /// Request handling time, by route pattern (`/feeds/{feed}`) and status.
    public static let requestDuration = "diffstream_http_request_duration_seconds"
    /// From a batch's broadcast to its write to the last subscriber.
    public static let publishToLastWrite = "diffstream_publish_to_last_write_seconds"
    /// Time spent diffing snapshots.
    public static let diff = "diffstream_diff_seconds"
    /// A store commit, from its start to its fsync's end (recorded by FeedStore under this name).
    public static let storeCommit = StoreMetrics.commitDurationLabel

    /// `# HELP` texts by name. The names and texts that existed before swift-metrics are unchanged.
    static let help: [String: String] = [
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
        requestDuration: "Time from a request's dispatch to its response, by route pattern and status.",
        publishToLastWrite: "Time from a batch's broadcast to its write to the last subscriber's socket.",
    ]

    /// Labelled families `/metrics` declares (`# HELP`, `# TYPE`) even before their first series.
    static let alwaysDeclared: [(name: String, type: String)] = [
        ("diffstream_feed_subscribers", "gauge"), ("diffstream_feed_batches_total", "counter"),
    ]

    /// Buckets of DiffStream's histograms: 100 µs to 10 s.
    static let buckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2.5), .seconds(10),
    ]
}

/// swift-prometheus's factory, with DiffStream's `# HELP` texts and histogram buckets for its names;
/// every other metric (a program's own) is made as `PrometheusMetricsFactory` makes it.
struct DescribedPrometheusFactory: MetricsFactory {
    let plain: PrometheusMetricsFactory
    var registry: PrometheusCollectorRegistry { plain.registry }

    init(registry: PrometheusCollectorRegistry) {
        plain = PrometheusMetricsFactory(registry: registry)
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let name = Self.described(label) else { return plain.makeCounter(label: label, dimensions: dimensions) }
        return registry.makeCounter(descriptor: name, labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        plain.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard !aggregate, let name = Self.described(label) else { return plain.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate) }
        return registry.makeGauge(descriptor: name, labels: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        plain.makeMeter(label: label, dimensions: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let name = Self.described(label) else { return plain.makeTimer(label: label, dimensions: dimensions) }
        return registry.makeDurationHistogram(descriptor: name, labels: dimensions, buckets: MetricName.buckets)
    }

    /// DiffStream's name `label` with its `# HELP` text; nil for a name that is not DiffStream's.
    private static func described(_ label: String) -> MetricNameDescriptor? {
        MetricName.help[label].map { MetricNameDescriptor(metricName: label, unitName: "", helpText: $0) }
    }

    func destroyCounter(_ handler: any CounterHandler) { plain.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { plain.destroyFloatingPointCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { plain.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { plain.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { plain.destroyTimer(handler) }
}
