import Synchronization

/// Calls `done` when the last of `loops` loops has arrived: one atomic decrement per loop, no lock.
/// Ends a fan-out (``HTTPServer/broadcast(_:to:written:)``) and a shutdown (every loop has finished).
final class LoopCountdown: Sendable {
    private let remaining: Atomic<Int>
    private let done: @Sendable () -> Void

    init(loops: Int, done: @escaping @Sendable () -> Void) {
        remaining = Atomic(loops)
        self.done = done
    }

    /// One loop has arrived; the last one calls `done`, on its own thread.
    func arrive() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done() }
    }
}
