/// One turn at a time, first come first served, held across suspensions: what an actor alone does not
/// give (it interleaves at every `await`). A ``Feed``'s writes and a ``ViewModelHost``'s changes each
/// take one. Used only from its owner's isolation, so it needs no lock.
package struct FIFOTurn {
    private var taken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// A free turn.
    package init() {}

    /// Whether someone holds the turn (and maybe others wait for it).
    package var isTaken: Bool { taken }

    /// How many wait behind the holder.
    package var waitingCount: Int { waiting.count }

    /// Takes the turn now if it is free; otherwise the caller must wait with ``enqueue(_:)``.
    package mutating func tryTake() -> Bool {
        guard !taken else { return false }
        taken = true
        return true
    }

    /// Waits behind the holder and everyone already waiting.
    package mutating func enqueue(_ continuation: CheckedContinuation<Void, Never>) {
        waiting.append(continuation)
    }

    /// Hands the turn to the next waiter (it stays taken), or frees it.
    package mutating func pass() {
        if waiting.isEmpty { taken = false } else { waiting.removeFirst().resume() }
    }
}
