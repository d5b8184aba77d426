import CoreMetrics
import DiffStreamServer
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A program that bootstrapped swift-metrics with a backend of its own keeps it: `/metrics` answers
/// 404 (no registry handed in), and DiffStream's counters reach that backend, pushed every
/// `metricsPushInterval` and at shutdown. swift-metrics is bootstrapped once per process, and this
/// test process bootstraps DiffStream's registry, so the program runs in a child process (an exit test).
struct ProgramMetricsBackendTests {
    @Test func aProgramsOwnBackendGetsDiffStreamsCounters() async {
        await #expect(processExitsWith: .success) {
            let backend = CountingMetrics()
            MetricsSystem.bootstrap(backend)
            var configuration = ServerTests.configuration()
            configuration.metricsPushInterval = 0.05
            guard let server = try? await Server(configuration: configuration), let port = try? await server.start() else { exit(3) }
            guard (try? await get("/metrics", port: port))?.status == 404 else { exit(4) }
            _ = try? await get("/healthz", port: port)
            // Pushed while the server runs: the two requests show up without a shutdown.
            var pushed = false
            for _ in 0..<200 where !pushed {
                pushed = backend.total("diffstream_requests_total") >= 2
                if !pushed { try? await Task.sleep(for: .milliseconds(25)) }
            }
            guard pushed else { exit(5) }
            _ = try? await get("/healthz", port: port)
            await server.shutdown()
            exit(backend.total("diffstream_requests_total") >= 3 ? 0 : 6)  // the last push, at shutdown
        }
    }

    /// A diff timed before anything bootstrapped swift-metrics (a registry used on its own) does not
    /// keep the no-op backend's timer: diffs after the bootstrap reach the backend.
    @Test func diffsTimedBeforeTheBootstrapAreRecordedAfterIt() async {
        await #expect(processExitsWith: .success) {
            func snapshot(_ items: [Int]) -> WireSnapshot {
                let list = items.map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",")
                return try! WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"a","model":null,"items":[\#(list)]}]}"#.utf8))
            }
            let registry = FeedRegistry()
            for items in [[1], [1, 2]] { _ = try? await registry.write("a", snapshot: snapshot(items)) }
            let backend = CountingMetrics()
            MetricsSystem.bootstrap(backend)
            _ = try? await registry.write("a", snapshot: snapshot([1, 2, 3]))
            exit(backend.total(MetricName.diff) == 1 ? 0 : 1)
        }
    }
}

/// A swift-metrics backend that sums each counter's increments, and counts each timer's records, by label.
final class CountingMetrics: MetricsFactory {
    private let totals = Mutex<[String: Int64]>([:])

    func total(_ label: String) -> Int64 { totals.withLock { $0[label] ?? 0 } }

    private final class Counting: CounterHandler {
        let label: String
        let owner: CountingMetrics
        init(label: String, owner: CountingMetrics) { self.label = label; self.owner = owner }
        func increment(by amount: Int64) { owner.totals.withLock { $0[label, default: 0] += amount } }
        func reset() {}
    }

    private final class CountingTimer: TimerHandler {
        let label: String
        let owner: CountingMetrics
        init(label: String, owner: CountingMetrics) { self.label = label; self.owner = owner }
        func recordNanoseconds(_ duration: Int64) { owner.totals.withLock { $0[label, default: 0] += 1 } }
    }

    private final class Ignoring: RecorderHandler, TimerHandler, FloatingPointCounterHandler, MeterHandler {
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
        func recordNanoseconds(_ duration: Int64) {}
        func increment(by amount: Double) {}
        func reset() {}
        func set(_ value: Int64) {}
        func set(_ value: Double) {}
        func increment(by amount: Int64) {}
        func decrement(by amount: Double) {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { Counting(label: label, owner: self) }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler { Ignoring() }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { Ignoring() }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { Ignoring() }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { CountingTimer(label: label, owner: self) }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
