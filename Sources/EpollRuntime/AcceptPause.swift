#if canImport(Glibc)
import Glibc
#endif

/// The acceptor's pause after running out of descriptors or memory, with an injected clock (`now`,
/// monotonic seconds): accepting stops for ``duration`` instead of spinning on a listener that stays
/// readable (the waiting connection cannot be taken) or dying; the next tick after it ends watches the
/// listeners again.
struct AcceptPause: Equatable, Sendable {
    /// How long accepting stops: 100 ms.
    static let duration = 0.1

    /// When the pause ends (nil: not paused).
    private(set) var until: Double?

    init() {}

    /// Whether a failed `accept` with this errno pauses accepting (EMFILE, ENFILE, ENOBUFS, ENOMEM: the
    /// process or the system is out of something a connection needs); any other is only logged.
    static func pauses(errno: Int32) -> Bool {
        errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM
    }

    /// Whether accepting is allowed at `now`.
    func allowsAccepting(now: Double) -> Bool {
        guard let until else { return true }
        return now >= until
    }

    /// Stops accepting from `now` for ``duration``.
    mutating func pause(now: Double) {
        until = now + Self.duration
    }

    /// A tick at `now`. - Returns: true once, at the first tick after a pause ended: the caller watches
    /// its listeners again.
    mutating func resume(now: Double) -> Bool {
        guard let until, now >= until else { return false }
        self.until = nil
        return true
    }
}
