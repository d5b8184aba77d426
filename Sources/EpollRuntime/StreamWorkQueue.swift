/// A loop's work for its event streams, in the order it arrived, as a pure value: fan-outs (one event
/// to many streams), handed out a slice per turn of the loop, and single-stream operations (an event,
/// a resync, the end of a stream) that must not overtake them. It decides which streams are served
/// this turn and keeps the remainder for the next; ``LoopCore`` carries the steps out and schedules
/// the next turn.
///
/// Fairness: a turn serves at most `budget` streams (an operation counts as one), so a fan-out to
/// 10,000 subscribers lets the loop serve its other sockets between slices; a fan-out that ends within
/// a turn leaves the rest of the budget to the work queued behind it. Order: every stream gets its
/// work in the order it was queued, because nothing is served out of turn while work is queued (see
/// ``isIdle``).
///
/// Generic over what a fan-out carries (the runtime's payload and its countdown) and over what an
/// operation is (the runtime's closure on a ``Connection``), so that it can be tested with plain values.
struct StreamWorkQueue<FanOut, Operation> {
    /// One thing to do, in order.
    enum Step {
        /// Write the fan-out to the streams `ids` (a slice of its streams); `isLast`: this slice ends
        /// the fan-out, whose every stream then has the event.
        case fanOut(FanOut, ids: ArraySlice<Int>, isLast: Bool)
        /// Run the operation on stream `id`.
        case operation(Operation, id: Int)
    }

    private enum Item {
        /// `next`: the index in `ids` of the first stream not yet served.
        case fanOut(FanOut, ids: [Int], next: Int)
        case operation(Operation, id: Int)
    }

    private var items: [Item] = []
    private var head = 0
    /// Between a turn's first ``nextStep(budget:)`` and the `nil` that ends it.
    private var inTurn = false

    init() {}

    /// Nothing is queued and no turn is under way: an operation may run at once instead of being queued.
    var isIdle: Bool { head == items.count && !inTurn }

    /// Work is left for a later turn (after a ``nextStep(budget:)`` returned `nil`).
    var hasWork: Bool { head < items.count }

    /// The fan-outs and operations queued and not finished.
    var count: Int { items.count - head }

    /// Queues a fan-out of `fanOut` to the streams `ids`, behind the work queued before it.
    /// - Returns: whether the queue was idle: the caller starts a turn now (otherwise a turn is under
    ///   way or already scheduled, and it reaches this fan-out in order).
    /// - Complexity: amortized O(1).
    mutating func append(fanOut: FanOut, to ids: [Int]) -> Bool {
        let wasIdle = isIdle
        items.append(.fanOut(fanOut, ids: ids, next: 0))
        return wasIdle
    }

    /// Queues `operation` on stream `id` behind the work queued before it. When ``isIdle``, the caller
    /// runs it at once instead (there is nothing for it to wait behind, and no turn to run it).
    /// - Complexity: amortized O(1).
    mutating func append(_ operation: Operation, on id: Int) {
        items.append(.operation(operation, id: id))
    }

    /// The next step of the current turn, or `nil` when the turn is over: `budget` (the streams this
    /// turn may still serve) is spent, or nothing is left. A fan-out step takes as many of its
    /// remaining streams as the budget allows; what it leaves is served first next turn. After the
    /// `nil`, ``hasWork`` tells whether to schedule another turn.
    /// - Complexity: O(1); the steps of a turn cover at most `budget` streams.
    @inline(__always)  // once per slice of every fan-out: its step is then never built as a value
    mutating func nextStep(budget: inout Int) -> Step? {
        guard budget > 0, head < items.count else {
            inTurn = false
            if head == items.count, !items.isEmpty {
                items = []  // an idle loop keeps no queue
                head = 0
            }
            return nil
        }
        inTurn = true
        switch items[head] {
        case .operation(let operation, let id):
            budget -= 1
            head += 1
            return .operation(operation, id: id)
        case .fanOut(let fanOut, let ids, let next):
            let end = min(ids.count, next + budget)
            budget -= end - next
            if end == ids.count {
                head += 1
            } else {
                items[head] = .fanOut(fanOut, ids: ids, next: end)
            }
            return .fanOut(fanOut, ids: ids[next..<end], isLast: end == ids.count)
        }
    }
}
