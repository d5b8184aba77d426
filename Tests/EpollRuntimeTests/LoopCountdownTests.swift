@testable import EpollRuntime
import Synchronization
import Testing

struct LoopCountdownTests {
    @Test(arguments: [1, 2, 5])
    func doneRunsOnceWhenTheLastLoopArrives(loops: Int) {
        let calls = Atomic<Int>(0)
        let countdown = LoopCountdown(loops: loops) { calls.add(1, ordering: .relaxed) }
        for arrived in 1...loops {
            #expect(calls.load(ordering: .relaxed) == 0, "before loop \(arrived) of \(loops)")
            countdown.arrive()
        }
        #expect(calls.load(ordering: .relaxed) == 1)
    }

    @Test func loopsArrivingTogetherStillCallDoneOnce() async {
        let calls = Atomic<Int>(0)
        let countdown = LoopCountdown(loops: 64) { calls.add(1, ordering: .relaxed) }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<64 { group.addTask { countdown.arrive() } }
        }
        #expect(calls.load(ordering: .relaxed) == 1)
    }
}
