import Foundation
import Logging

/// The open-file limit: raised to the hard limit, and connections capped to fit under it.
enum FileLimit {
    static func fit(maxConnections: Int, logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return maxConnections }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let reserve = 64  // listeners, epoll, eventfd, static files, logs
        let available = Int(limit.rlim_cur) - reserve
        if maxConnections > available {
            logger.warning("--max-connections \(maxConnections) exceeds what the open-file limit (\(limit.rlim_cur)) allows: serving at most \(available) connections")
            return max(1, available)
        }
        return maxConnections
    }
}
