/// When a pub/sub connection must be pinged, and when it counts as dead: a pure state machine, with
/// the time handed in (seconds on a monotonic clock), tested without sockets.
///
/// Anything read shows the connection alive. After `pingInterval` of silence a `PING` is due; if
/// nothing at all is read within `timeout` of sending it, the connection is dead (a Redis that hangs,
/// a network that drops packets without a reset).
struct PubSubLiveness: Equatable {
    /// What the connection's thread does next.
    enum Step: Equatable {
        /// Wait for the socket at most this many seconds, then ask again.
        case wait(seconds: Double)
        /// Send a `PING` now (it is counted as sent), then ask again.
        case ping
        /// Nothing was read within the timeout of a `PING`: close the connection.
        case dead
    }

    let pingInterval: Double
    let timeout: Double
    private(set) var lastHeard: Double
    private(set) var pingSentAt: Double?

    /// A connection that was just made and has a `PING` on its way (the one that confirms the
    /// subscriptions).
    init(now: Double, pingInterval: Double, timeout: Double) {
        self.pingInterval = pingInterval
        self.timeout = timeout
        self.lastHeard = now
        self.pingSentAt = now
    }

    /// Bytes were read at `now`.
    mutating func heard(at now: Double) {
        lastHeard = now
        pingSentAt = nil
    }

    /// The next step at `now`.
    mutating func step(at now: Double) -> Step {
        if let sent = pingSentAt {
            let waited = now - sent
            return waited >= timeout ? .dead : .wait(seconds: timeout - waited)
        }
        let silent = now - lastHeard
        guard silent >= pingInterval else { return .wait(seconds: pingInterval - silent) }
        pingSentAt = now
        return .ping
    }
}
