import CoreMetrics
import FeedCore
import Synchronization

/// The HTTP API's metric: the request timer by route pattern and status, with its `# HELP` text
/// (`/metrics` joins it to the feed core's list, ``MetricName/help``).
public enum HTTPMetricName {
    /// Request handling time, by route pattern (`/feeds/{feed}`) and status.
    public static let requestDuration = "diffstream_http_request_duration_seconds"
    /// Presence refused at `--max-presence-feeds` (issue 55): streams that made no one present, and
    /// reads of a presence feed not held.
    public static let presenceRefusals = "diffstream_presence_refusals_total"

    /// `# HELP` texts by name.
    package static let help: [String: String] = [
        requestDuration: "Time from a request's dispatch to its response, by route pattern and status.",
        presenceRefusals: "Presence refused at --max-presence-feeds: streams that made no one present, and reads of a presence feed not held (503, or notfound in a multi-feed stream).",
    ]
}

extension MetricName {
    /// Deprecated for one release: the name is the HTTP API's now.
    @available(*, deprecated, renamed: "HTTPMetricName.requestDuration") public static var requestDuration: String { HTTPMetricName.requestDuration }
}

/// The request-duration timers, made once per route pattern and status, then reused: making one looks
/// it up in the backend's registry, which cost a request about a fifth of its instructions when done per
/// record. Keyed by the pattern's index in the route table times 1000 plus the status: one integer
/// hashed per request, no key built. One made before the metrics system is bootstrapped is not kept
/// (it is the no-op backend's for good).
package final class RequestTimers: Sendable {
    package static let shared = RequestTimers()
    private let timers = Mutex<[Int: CoreMetrics.Timer]>([:])

    /// The timer of ``HTTPMetricName/requestDuration`` for the route pattern `patterns[route]` and a status.
    package func timer<Pattern: CustomStringConvertible>(route: Int, of patterns: [Pattern], status: Int) -> CoreMetrics.Timer {
        let key = route &* 1000 &+ status
        if let timer = timers.withLock({ $0[key] }) { return timer }
        let timer = CoreMetrics.Timer(label: HTTPMetricName.requestDuration, dimensions: [("route", patterns[route].description), ("status", String(status))])
        guard MetricHandles.isBootstrapped else { return timer }
        return timers.withLock { timers in
            if let existing = timers[key] { return existing }
            timers[key] = timer
            return timer
        }
    }
}
