import Synchronization

/// Lets exactly one of several racers through (the first to call ``pass()``).
package final class OnceGate: Sendable {
    private let state = Mutex<(passed: Bool, timer: Task<Void, Never>?)>((false, nil))

    package init() {}

    /// True for the first caller only, which also cancels the task given to ``cancelOnPass(_:)``.
    package func pass() -> Bool {
        let (first, timer) = state.withLock { state in
            defer { state = (true, nil) }
            return (!state.passed, state.timer)
        }
        timer?.cancel()
        return first
    }

    /// Cancels `timer` at the first ``pass()``, or at once if it has come.
    package func cancelOnPass(_ timer: Task<Void, Never>) {
        let passed = state.withLock { state in
            if !state.passed { state.timer = timer }
            return state.passed
        }
        if passed { timer.cancel() }
    }
}
