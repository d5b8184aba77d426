import CoreMetrics
import Synchronization

/// swift-metrics timers made once per label and dimensions, on first use (so after the program or the
/// server has bootstrapped the metrics system), then reused: making one looks it up in the backend's
/// registry, which cost a request about a fifth of its instructions when done per record.
final class MetricHandles: Sendable {
    static let shared = MetricHandles()
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])
    /// The request-duration timers by route pattern, then status code: looked up by the pattern's
    /// text (a few dozen at most) without building a key per request.
    private let requestTimers = Mutex<[String: [Int: CoreMetrics.Timer]]>([:])

    /// The timer of ``MetricName/requestDuration`` for a route pattern and a status.
    func requestTimer(route: String, status: Int) -> CoreMetrics.Timer {
        if let timer = requestTimers.withLock({ $0[route]?[status] }) { return timer }
        let timer = CoreMetrics.Timer(label: MetricName.requestDuration, dimensions: [("route", route), ("status", String(status))])
        return requestTimers.withLock { timers in
            if let existing = timers[route]?[status] { return existing }
            timers[route, default: [:]][status] = timer
            return timer
        }
    }

    func timer(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Timer {
        var key = label
        for (name, value) in dimensions { key += "\u{1F}" + name + "=" + value }
        if let timer = timers.withLock({ $0[key] }) { return timer }
        let timer = CoreMetrics.Timer(label: label, dimensions: dimensions)
        return timers.withLock { timers in
            if let existing = timers[key] { return existing }
            timers[key] = timer
            return timer
        }
    }
}
