@testable import EpollRuntime
import Testing
import TestSupport

struct StreamWorkQueueTests {
    typealias Queue = StreamWorkQueue<String, String>

    /// A step as a plain value, to compare.
    enum Served: Equatable {
        case fanOut(String, [Int], last: Bool)
        case operation(String, Int)
    }

    /// One turn: every step up to the `nil` that ends it.
    static func turn(_ queue: inout Queue, budget: Int) -> [Served] {
        var budget = budget
        var served: [Served] = []
        while let step = queue.nextStep(budget: &budget) {
            switch step {
            case .fanOut(let name, let ids, let isLast): served.append(.fanOut(name, Array(ids), last: isLast))
            case .operation(let name, let id): served.append(.operation(name, id))
            }
        }
        return served
    }

    /// A fan-out is handed out `budget` streams per turn, in order, and only its last slice says so.
    @Test(arguments: [
        (600, 256, [0..<256, 256..<512, 512..<600]),
        (256, 256, [0..<256]),
        (257, 256, [0..<256, 256..<257]),
        (10, 3, [0..<3, 3..<6, 6..<9, 9..<10]),
        (1, 256, [0..<1]),
    ] as [(Int, Int, [Range<Int>])])
    func aFanOutIsServedASlicePerTurn(streams: Int, budget: Int, slices: [Range<Int>]) {
        var queue = Queue()
        #expect(queue.append(fanOut: "e", to: Array(0..<streams)) == true)
        for (number, slice) in slices.enumerated() {
            #expect(queue.hasWork, "before turn \(number)")
            #expect(Self.turn(&queue, budget: budget) == [.fanOut("e", Array(slice), last: number == slices.count - 1)])
        }
        #expect(!queue.hasWork && queue.isIdle && queue.count == 0)
    }

    @Test func aFanOutToNoStreamEndsInOneEmptyStep() {
        var queue = Queue()
        _ = queue.append(fanOut: "e", to: [])
        #expect(Self.turn(&queue, budget: 256) == [.fanOut("e", [], last: true)])
        #expect(queue.isIdle)
    }

    /// An operation that arrives while a fan-out is queued waits behind it, even across turns; on an
    /// idle queue it is the caller's to run at once.
    @Test func anOperationWaitsBehindTheFanOutBeforeIt() {
        var queue = Queue()
        #expect(queue.isIdle, "nothing queued: an operation runs at once")
        #expect(queue.append(fanOut: "e1", to: Array(0..<300)) == true, "the first work starts a turn")
        #expect(!queue.isIdle)
        queue.append("end", on: 7)
        #expect(queue.append(fanOut: "e2", to: [7]) == false, "a turn is already scheduled")
        #expect(Self.turn(&queue, budget: 256) == [.fanOut("e1", Array(0..<256), last: false)])
        #expect(!queue.isIdle && queue.hasWork, "between turns, operations still queue")
        #expect(Self.turn(&queue, budget: 256) == [
            .fanOut("e1", Array(256..<300), last: true), .operation("end", 7), .fanOut("e2", [7], last: true),
        ])
        #expect(queue.isIdle)
    }

    /// Fairness: a fan-out that ends within a turn leaves the rest of the budget to the next one; an
    /// operation counts as one stream.
    @Test(arguments: [
        ([100, 300], [[(0, 0..<100), (1, 0..<156)], [(1, 156..<300)]]),
        ([256, 1], [[(0, 0..<256)], [(1, 0..<1)]]),
        ([0, 0, 5], [[(0, 0..<0), (1, 0..<0), (2, 0..<5)]]),
    ] as [([Int], [[(Int, Range<Int>)]])])
    func fanOutsShareTurnsInArrivalOrder(sizes: [Int], turns: [[(Int, Range<Int>)]]) {
        var queue = Queue()
        for (number, size) in sizes.enumerated() { _ = queue.append(fanOut: "e\(number)", to: Array(0..<size)) }
        for expected in turns {
            #expect(Self.turn(&queue, budget: 256) == expected.map { .fanOut("e\($0.0)", Array($0.1), last: $0.1.upperBound == sizes[$0.0]) })
        }
        #expect(queue.isIdle)
    }

    @Test func operationsSpendTheBudgetOneEach() {
        var queue = Queue()
        _ = queue.append(fanOut: "e", to: [])
        for id in 0..<300 { queue.append("op", on: id) }
        #expect(Self.turn(&queue, budget: 256).count == 257, "the empty fan-out and 256 operations")
        #expect(Self.turn(&queue, budget: 256) == (256..<300).map { .operation("op", $0) })
    }

    /// Work queued during a turn (from a step being carried out) does not run out of order: the queue
    /// is not idle until the turn ends, and the turn reaches the new work if its budget allows.
    @Test func workQueuedDuringATurnIsServedInOrder() {
        var queue = Queue()
        _ = queue.append(fanOut: "e1", to: [1, 2])
        var budget = 256
        guard case .fanOut(_, let ids, true)? = queue.nextStep(budget: &budget) else {
            Issue.record("expected the whole fan-out")
            return
        }
        #expect(Array(ids) == [1, 2] && budget == 254)
        #expect(!queue.isIdle, "mid-turn: an operation must queue")
        queue.append("end", on: 1)
        #expect(queue.append(fanOut: "e2", to: [2]) == false)
        guard case .operation("end", 1)? = queue.nextStep(budget: &budget) else {
            Issue.record("expected the operation next")
            return
        }
        guard case .fanOut("e2", let rest, true)? = queue.nextStep(budget: &budget) else {
            Issue.record("expected the second fan-out")
            return
        }
        #expect(Array(rest) == [2])
        #expect(queue.nextStep(budget: &budget) == nil && queue.isIdle && !queue.hasWork)
    }

    /// Seeded random fan-outs, operations and turns: no turn serves more than its budget, every
    /// stream gets its work in the order it was queued, and everything queued is served.
    @Test(arguments: [1, 2, 3, 42, 2026] as [UInt64])
    func keepsEachStreamsOrderUnderAnyInterleaving(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var queue = Queue()
        var sent: [Int: [String]] = [:]
        var received: [Int: [String]] = [:]
        var completed: [String] = []
        var fanOuts: [String] = []
        for number in 0..<400 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let ids = (0..<Int.random(in: 0..<600, using: &rng)).map { _ in Int.random(in: 0..<50, using: &rng) }
                let unique = Array(Set(ids)).sorted()
                let name = "f\(number)"
                for id in unique { sent[id, default: []].append(name) }
                fanOuts.append(name)
                _ = queue.append(fanOut: name, to: unique)
            case 4..<7:
                let id = Int.random(in: 0..<50, using: &rng)
                let name = "o\(number)"
                sent[id, default: []].append(name)
                if queue.isIdle { received[id, default: []].append(name) } else { queue.append(name, on: id) }
            default:
                let budget = Int.random(in: 1...64, using: &rng)
                var left = budget
                var served = 0
                while let step = queue.nextStep(budget: &left) {
                    switch step {
                    case .fanOut(let name, let ids, let isLast):
                        served += ids.count
                        for id in ids { received[id, default: []].append(name) }
                        if isLast { completed.append(name) }
                    case .operation(let name, let id):
                        served += 1
                        received[id, default: []].append(name)
                    }
                }
                #expect(served <= budget)
            }
        }
        while queue.hasWork {
            for step in Self.turn(&queue, budget: 256) {
                switch step {
                case .fanOut(let name, let ids, let last):
                    for id in ids { received[id, default: []].append(name) }
                    if last { completed.append(name) }
                case .operation(let name, let id):
                    received[id, default: []].append(name)
                }
            }
        }
        #expect(received == sent)
        #expect(completed == fanOuts, "every fan-out ends once, in order")
    }
}
