import FeedCore
import ViewModelHosting
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
    /// Every `# HELP` text, the one list: the feed core's (``MetricName/help``), the families'
    /// (``FamilyMetricName/help``) and the HTTP API's (``HTTPMetricName/help``).
    package static let help: [String: String] = MetricName.help
        .merging(FamilyMetricName.help) { first, _ in first }
        .merging(HTTPMetricName.help) { first, _ in first }
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
    package func render(server: ServerMetrics?, feeds: FeedMetrics, storage: StorageAccount) -> [UInt8]? {
        publish(server: server, feeds: feeds, storage: storage)
        guard let registry else { return nil }
        var bytes = registry.emitToBuffer()
        // The registry drops a family with no series; these are declared even then (a feed's first
        // batch or subscriber adds the first sample), as they always were.
        let text = String(decoding: bytes, as: UTF8.self)
        for (name, type) in MetricName.alwaysDeclared where !text.contains("# TYPE \(name) ") {
            bytes += Array("# HELP \(name) \(MetricsEndpoint.help[name] ?? "")\n# TYPE \(name) \(type)\n".utf8)
        }
        return bytes
    }

    /// Pushes the values DiffStream keeps in its own counters (cheap on the hot paths: per-loop atomics,
    /// per-feed tallies) to swift-metrics: gauges are set, counters advanced by what they gained since
    /// the last push.
    package func publish(server: ServerMetrics?, feeds: FeedMetrics, storage: StorageAccount) {
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

    package static func samples(of server: ServerMetrics) -> [MetricSample] {
        server.values.map { MetricSample(name: $0.name, labels: $0.labels, value: Double($0.value), kind: $0.isGauge ? .gauge : .counter) }
    }
}

/// The swift-metrics handles DiffStream's samples are pushed through, by series.
private struct Mirror: Sendable {
    package var counters: [String: (counter: CoreMetrics.Counter, pushed: Int64)] = [:]
    package var gauges: [String: CoreMetrics.Gauge] = [:]
    /// The store's commit timer has been made (it is recorded in FeedStore, from the first commit on).
    package var commitTimerRegistered = false

    package mutating func push(_ samples: [MetricSample]) {
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
package enum MetricsBootstrap {
    /// The registry DiffStream bootstrapped swift-metrics with, once it has.
    private static let ours = Mutex<PrometheusCollectorRegistry?>(nil)

    package static func registry(handing handed: PrometheusCollectorRegistry?) -> PrometheusCollectorRegistry? {
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


/// swift-prometheus's factory, with DiffStream's `# HELP` texts and histogram buckets for its names;
/// every other metric (a program's own) is made as `PrometheusMetricsFactory` makes it.
package struct DescribedPrometheusFactory: MetricsFactory {
    package let plain: PrometheusMetricsFactory
    package var registry: PrometheusCollectorRegistry { plain.registry }

    package init(registry: PrometheusCollectorRegistry) {
        plain = PrometheusMetricsFactory(registry: registry)
    }

    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let name = Self.described(label) else { return plain.makeCounter(label: label, dimensions: dimensions) }
        return registry.makeCounter(descriptor: name, labels: dimensions)
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        plain.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard !aggregate, let name = Self.described(label) else { return plain.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate) }
        return registry.makeGauge(descriptor: name, labels: dimensions)
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        plain.makeMeter(label: label, dimensions: dimensions)
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let name = Self.described(label) else { return plain.makeTimer(label: label, dimensions: dimensions) }
        return registry.makeDurationHistogram(descriptor: name, labels: dimensions, buckets: MetricName.buckets)
    }

    /// DiffStream's name `label` with its `# HELP` text; nil for a name that is not DiffStream's.
    private static func described(_ label: String) -> MetricNameDescriptor? {
        MetricsEndpoint.help[label].map { MetricNameDescriptor(metricName: label, unitName: "", helpText: $0) }
    }

    package func destroyCounter(_ handler: any CounterHandler) { plain.destroyCounter(handler) }
    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { plain.destroyFloatingPointCounter(handler) }
    package func destroyRecorder(_ handler: any RecorderHandler) { plain.destroyRecorder(handler) }
    package func destroyMeter(_ handler: any MeterHandler) { plain.destroyMeter(handler) }
    package func destroyTimer(_ handler: any TimerHandler) { plain.destroyTimer(handler) }
}
