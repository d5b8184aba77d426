/// When each of a loop's connections next needs its machine ticked (timeouts, heartbeats), as a pure
/// value over a ``DeadlineQueue``: given the time, which connections are due. The clock is injected
/// (`now`, monotonic seconds) like the ``ConnectionMachine``'s.
///
/// Each connection remembers the one deadline it is queued at (``Connection/timerDeadline``: kept on
/// the connection, not in a table here, so an idle subscriber costs no table entry). Entries are never
/// updated in place: a deadline that moves earlier is queued again and the old entry goes stale; one
/// that moves later is found when the earlier entry comes due. Stale entries are told apart when they
/// come due (the connection is gone, or is queued at another deadline) and dropped; when they pile up,
/// the queue is rebuilt from the live deadlines.
struct LoopTimers {
    private var queue = DeadlineQueue()

    init() {}

    /// Entries in the queue, stale ones included.
    var count: Int { queue.count }

    /// Whether a connection whose machine next needs a tick at `deadline`, and which is queued at
    /// `queued` (nil: not queued), must be queued again: only when the new deadline is earlier.
    static func needsEntry(at deadline: Double, queuedAt queued: Double?) -> Bool {
        guard let queued else { return true }
        return deadline < queued
    }

    /// Queues connection `id` at `deadline`.
    /// - Complexity: O(log n).
    mutating func schedule(_ deadline: Double, for id: Int) {
        queue.push(deadline, id: id)
    }

    /// The connections due at `now`, earliest first, each at most once; removes every entry due.
    /// `queuedAt(id)` is the deadline connection `id` is queued at now (nil: gone or not queued): an
    /// entry at any other deadline is stale and dropped. The caller clears each returned connection's
    /// deadline and ticks it after this returns, so one that is due again at once waits for the next
    /// tick.
    /// - Complexity: O(k log n) for the k entries due.
    mutating func popDue(now: Double, queuedAt: (Int) -> Double?) -> [Int] {
        var due: [Int] = []
        // A connection can have two entries at one deadline: queued at 5, moved to 3, ticked at 3 and
        // queued at 5 again. It is due once.
        var taken = Set<Int>()
        while let entry = queue.popDue(now: now) {
            guard queuedAt(entry.id) == entry.deadline, taken.insert(entry.id).inserted else { continue }
            due.append(entry.id)
        }
        return due
    }

    /// Whether stale entries have piled up enough to rebuild: more than twice `live` (the loop's
    /// connections) plus 1,024 entries.
    func needsRebuild(live: Int) -> Bool {
        queue.count > 2 * live + 1024
    }

    /// Replaces every entry with `live` (each queued connection's one current deadline).
    /// - Complexity: O(n).
    mutating func rebuild(from live: [DeadlineQueue.Entry]) {
        queue.rebuild(from: live)
    }
}
