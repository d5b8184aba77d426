import FeedCore
import Testing

/// The turn a feed's writes and a view model's changes take: first come, first served.
struct FIFOTurnTests {
    actor Recorder {
        var turn = FIFOTurn()
        var order: [Int] = []
        func run(_ index: Int, arrived: @Sendable () -> Void) async {
            if !turn.tryTake() {
                await withCheckedContinuation { continuation in
                    turn.enqueue(continuation)
                    arrived()
                }
            } else {
                arrived()
            }
            order.append(index)
            await Task.yield()  // a suspension while holding the turn: nobody may overtake
            order.append(-index)
            turn.pass()
        }
    }

    @Test func holdersNeverInterleaveAndWaitersGoInArrivalOrder() async {
        let recorder = Recorder()
        await withTaskGroup(of: Void.self) { group in
            for index in 1...20 {
                // Each task is started only once the one before has taken or queued for the turn.
                await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                    group.addTask { await recorder.run(index, arrived: { started.resume() }) }
                }
            }
        }
        let order = await recorder.order
        #expect(order == (1...20).flatMap { [$0, -$0] })
    }
}
