import CoreMetrics
import Synchronization

/// swift-metrics timers made once per label and dimensions, on first use, then reused: making one looks
/// it up in the backend's registry, which cost a request about a fifth of its instructions when done
/// per record. One made before the metrics system is bootstrapped (a harness, a registry used before
/// any server) is the no-op backend's for good, so it is not kept: the first after the bootstrap is.
package final class MetricHandles: Sendable {
    package static let shared = MetricHandles()
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])
    package func timer(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Timer {
        var key = label
        for (name, value) in dimensions { key += "\u{1F}" + name + "=" + value }
        if let timer = timers.withLock({ $0[key] }) { return timer }
        let timer = CoreMetrics.Timer(label: label, dimensions: dimensions)
        guard Self.isBootstrapped else { return timer }
        return timers.withLock { timers in
            if let existing = timers[key] { return existing }
            timers[key] = timer
            return timer
        }
    }

    /// The metrics system has a backend (it is bootstrapped once per process, so this stays true).
    package static var isBootstrapped: Bool { !(MetricsSystem.factory is NOOPMetricsHandler) }
}
