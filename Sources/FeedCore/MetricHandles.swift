import CoreMetrics
import Synchronization

/// swift-metrics timers made once per label and dimensions, on first use, then reused: making one looks
/// it up in the backend's registry, which cost a request about a fifth of its instructions when done
/// per record. One made before the metrics system is bootstrapped (a harness, a registry used before
/// any server) is the no-op backend's for good, so it is not kept: the first after the bootstrap is.
package final class MetricHandles: Sendable {
    package static let shared = MetricHandles()
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])
    /// The request-duration timers by route pattern and status code, keyed by the pattern's index in
    /// the route table times 1000 plus the status: one integer hashed per request, no key built.
    private let requestTimers = Mutex<[Int: CoreMetrics.Timer]>([:])

    /// The timer of ``MetricName/requestDuration`` for the route pattern `patterns[route]` and a status.
    package func requestTimer<Pattern: CustomStringConvertible>(route: Int, of patterns: [Pattern], status: Int) -> CoreMetrics.Timer {
        let key = route &* 1000 &+ status
        if let timer = requestTimers.withLock({ $0[key] }) { return timer }
        let timer = CoreMetrics.Timer(label: MetricName.requestDuration, dimensions: [("route", patterns[route].description), ("status", String(status))])
        guard Self.isBootstrapped else { return timer }
        return requestTimers.withLock { timers in
            if let existing = timers[key] { return existing }
            timers[key] = timer
            return timer
        }
    }

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
    private static var isBootstrapped: Bool { !(MetricsSystem.factory is NOOPMetricsHandler) }
}
