import CoreMetrics
import Synchronization

/// swift-metrics timers made once per label and dimensions, on first use (so after the program or the
/// server has bootstrapped the metrics system), then reused: making one looks it up in the backend's
/// registry, which cost a request about a fifth of its instructions when done per record.
final class MetricHandles: Sendable {
    static let shared = MetricHandles()
    private let timers = Mutex<[String: CoreMetrics.Timer]>([:])

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
