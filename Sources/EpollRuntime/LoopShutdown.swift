/// One loop's graceful shutdown as a small state machine with an injected clock (`now`, monotonic
/// seconds): running, then draining (its connections finish what they were doing) until none remains
/// or the timeout has passed, then finished. ``LoopCore`` carries it out: it tells its connections to
/// begin their shutdown when it begins, and when it finishes closes those that remain, stops the loop
/// and calls the completion.
struct LoopShutdown: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        case running
        /// Waiting for the connections to close, until `deadline`.
        case draining(deadline: Double)
        case finished
    }

    private(set) var phase = Phase.running

    init() {}

    /// Whether a shutdown has begun (new connections are closed at once from then on).
    var isShuttingDown: Bool { phase != .running }

    /// Begins the shutdown at `now`, to finish at the latest `timeout` seconds later.
    /// - Returns: false if a shutdown had already begun (this one changes nothing).
    mutating func begin(now: Double, timeout: Double) -> Bool {
        guard phase == .running else { return false }
        phase = .draining(deadline: now + timeout)
        return true
    }

    /// A tick at `now` with `openConnections` connections left on the loop.
    /// - Returns: true exactly once: at the first tick of a shutdown where no connection is left or
    ///   the deadline has come. The caller then closes the rest, stops the loop and completes.
    mutating func tick(now: Double, openConnections: Int) -> Bool {
        guard case .draining(let deadline) = phase, openConnections == 0 || now >= deadline else { return false }
        phase = .finished
        return true
    }
}
