/// The times at which connections next need their timer, earliest first: a binary min-heap of
/// (deadline, connection id) pairs.
///
/// A loop ticks only the connections whose deadline has come, rather than every connection on every
/// tick: an idle subscriber costs no CPU until its next heartbeat. Entries are never updated in
/// place. When a connection's deadline moves earlier, a new entry is pushed and the old one goes
/// stale; the owner recognises stale entries when they come due (see `LoopTimers` in EpollRuntime) and calls
/// ``rebuild(from:)`` when they pile up.
package struct DeadlineQueue: Sendable {
    package struct Entry: Equatable, Sendable {
        package var deadline: Double
        package var id: Int
        package init(deadline: Double, id: Int) {
            self.deadline = deadline
            self.id = id
        }
    }

    package private(set) var entries: [Entry] = []

    package init() {}

    package var count: Int { entries.count }
    package var isEmpty: Bool { entries.isEmpty }
    /// The earliest entry, if any.
    package var first: Entry? { entries.first }

    /// - Complexity: O(log n).
    package mutating func push(_ deadline: Double, id: Int) {
        entries.append(Entry(deadline: deadline, id: id))
        siftUp(entries.count - 1)
    }

    /// Removes and returns the earliest entry if it is due at `now` (its deadline ≤ `now`).
    /// - Complexity: O(log n).
    package mutating func popDue(now: Double) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
        return first
    }

    /// Replaces every entry with `live` (each connection's one current deadline), dropping stale ones.
    /// - Complexity: O(n).
    package mutating func rebuild(from live: [Entry]) {
        entries = live
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        let entry = entries[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard entry.deadline < entries[parent].deadline else { break }
            entries[child] = entries[parent]
            child = parent
        }
        entries[child] = entry
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let entry = entries[parent]
        let count = entries.count
        while true {
            var child = 2 * parent + 1
            guard child < count else { break }
            if child + 1 < count && entries[child + 1].deadline < entries[child].deadline { child += 1 }
            guard entries[child].deadline < entry.deadline else { break }
            entries[parent] = entries[child]
            parent = child
        }
        entries[parent] = entry
    }
}
