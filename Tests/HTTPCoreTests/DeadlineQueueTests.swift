@testable import HTTPCore
import Testing
import TestSupport

struct DeadlineQueueTests {
    @Test func popsOnlyWhatIsDueEarliestFirst() {
        var queue = DeadlineQueue()
        queue.push(5, id: 1)
        queue.push(2, id: 2)
        queue.push(9, id: 3)
        queue.push(2, id: 4)
        #expect(queue.popDue(now: 1) == nil)
        let first = queue.popDue(now: 5)
        let second = queue.popDue(now: 5)
        #expect(first?.deadline == 2 && second?.deadline == 2 && Set([first?.id, second?.id]) == [2, 4])
        #expect(queue.popDue(now: 5) == DeadlineQueue.Entry(deadline: 5, id: 1))
        #expect(queue.popDue(now: 8.9) == nil)
        #expect(queue.count == 1 && queue.first?.id == 3)
    }

    /// Seeded random pushes, pops and rebuilds against a plain array as the oracle: the queue hands
    /// out exactly the due entries, in deadline order.
    @Test(arguments: [1, 2, 3, 42, 2026] as [UInt64])
    func matchesASortedArray(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var queue = DeadlineQueue()
        var oracle: [DeadlineQueue.Entry] = []
        var now = 0.0
        var nextID = 0
        for _ in 0..<2000 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                let deadline = now + Double(Int.random(in: 0..<50, using: &rng)) / 4
                nextID += 1
                queue.push(deadline, id: nextID)
                oracle.append(DeadlineQueue.Entry(deadline: deadline, id: nextID))
            case 6..<9:
                now += Double(Int.random(in: 0..<8, using: &rng)) / 4
                var popped: [DeadlineQueue.Entry] = []
                while let entry = queue.popDue(now: now) { popped.append(entry) }
                #expect(popped.map(\.deadline) == popped.map(\.deadline).sorted())
                let due = oracle.filter { $0.deadline <= now }
                oracle.removeAll { $0.deadline <= now }
                #expect(Set(popped.map(\.id)) == Set(due.map(\.id)) && popped.count == due.count)
            default:
                let kept = oracle.filter { _ in Bool.random(using: &rng) }
                queue.rebuild(from: kept)
                oracle = kept
            }
            #expect(queue.count == oracle.count)
            #expect(queue.first?.deadline == oracle.map(\.deadline).min())
        }
    }
}
