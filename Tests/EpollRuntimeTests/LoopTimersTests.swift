@testable import EpollRuntime
import HTTPCore
import Testing

struct LoopTimersTests {
    /// A connection is queued again only when its deadline moves earlier than the one it is queued at.
    @Test(arguments: [
        (5, nil, true), (5, 6, true), (5, 5, false), (5, 4, false),
    ] as [(Double, Double?, Bool)])
    func onlyAnEarlierDeadlineIsQueuedAgain(deadline: Double, queued: Double?, needed: Bool) {
        #expect(LoopTimers.needsEntry(at: deadline, queuedAt: queued) == needed)
    }

    /// What is due at `now` comes out earliest first; what is not stays.
    @Test(arguments: [
        (0.5, [Int]()), (1, [1]), (2.5, [1, 3, 2]), (10, [1, 3, 2, 4]),
    ] as [(Double, [Int])])
    func theDueConnectionsComeOutEarliestFirst(now: Double, due: [Int]) {
        let deadlines: [Int: Double] = [1: 1, 2: 2.5, 3: 2, 4: 7]
        var timers = LoopTimers()
        for (id, deadline) in deadlines.sorted(by: { $0.key > $1.key }) { timers.schedule(deadline, for: id) }
        #expect(timers.popDue(now: now) { deadlines[$0] } == due)
        #expect(timers.count == deadlines.count - due.count)
        #expect(timers.popDue(now: now) { deadlines[$0] } == [], "what was due is gone")
    }

    /// An entry whose connection is gone, or is queued at another deadline now, is stale: dropped, not due.
    @Test func staleEntriesAreDroppedNotDue() {
        var timers = LoopTimers()
        timers.schedule(5, for: 1)
        timers.schedule(3, for: 1)  // moved earlier: the entry at 5 goes stale
        timers.schedule(4, for: 2)  // closed since
        var queued: [Int: Double] = [1: 3]
        #expect(timers.popDue(now: 3) { queued[$0] } == [1])
        queued[1] = 9  // ticked at 3, queued again at 9
        #expect(timers.popDue(now: 6) { queued[$0] } == [], "the entry at 5 and the closed connection's are stale")
        #expect(timers.count == 0)
    }

    /// Queued at 5, moved to 3, ticked at 3 and queued at 5 again: two entries at 5, one tick.
    @Test func twoEntriesAtTheSameDeadlineAreDueOnce() {
        var timers = LoopTimers()
        timers.schedule(5, for: 1)
        timers.schedule(5, for: 1)
        timers.schedule(5, for: 2)
        #expect(timers.popDue(now: 5) { _ in 5 }.sorted() == [1, 2])
        #expect(timers.count == 0)
    }

    /// The queue is rebuilt when its entries pass twice the live connections plus 1,024.
    @Test(arguments: [
        (1024, 0, false), (1025, 0, true), (1224, 100, false), (1225, 100, true),
    ] as [(Int, Int, Bool)])
    func rebuildsWhenStaleEntriesPileUp(entries: Int, live: Int, rebuild: Bool) {
        var timers = LoopTimers()
        for id in 0..<entries { timers.schedule(Double(id), for: id) }
        #expect(timers.needsRebuild(live: live) == rebuild)
    }

    @Test func aRebuildKeepsOnlyTheLiveDeadlines() {
        var timers = LoopTimers()
        for id in 0..<2000 { timers.schedule(Double(id % 7), for: id % 3) }
        timers.rebuild(from: [DeadlineQueue.Entry(deadline: 4, id: 1), DeadlineQueue.Entry(deadline: 2, id: 2)])
        #expect(timers.count == 2)
        #expect(timers.popDue(now: 10) { [1: 4, 2: 2][$0] } == [2, 1])
    }
}
