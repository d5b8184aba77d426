@testable import EpollRuntime
import Testing

@Suite(.timeLimit(.minutes(1)))
struct EventLoopTests {
    /// The loop sleeps until its next tick, never wakes before it to spin: a wait rounds up to the
    /// next whole millisecond, and only a deadline that has passed waits 0.
    @Test(arguments: [
        (0.25, 250), (0.0995, 100), (0.0009, 1), (0.000_001, 1), (0.0, 0), (-0.5, 0), (1e12, Int(Int32.max)),
    ] as [(Double, Int)])
    func waitsUntilTheDeadlineRoundedUpToAMillisecond(remaining: Double, milliseconds: Int) {
        #expect(Int(EventLoop.waitMilliseconds(until: 5 + remaining, now: 5)) == milliseconds)
    }

    actor Feedish {
        let loop: EventLoop
        init(loop: EventLoop) { self.loop = loop }
        func onLoop() -> Bool { loop.isCurrent }
    }

    /// A task that prefers the loop (a small request's handler) runs on the loop's thread, and so does
    /// a default actor it calls; a task without the preference does not.
    @Test func aTaskThatPrefersTheLoopRunsOnItsThreadWithTheActorsItCalls() async throws {
        let loop = try EventLoop()
        loop.start(name: "test-loop")
        defer { loop.stop() }
        let feed = Feedish(loop: loop)
        let (onLoop, actorOnLoop) = await Task(executorPreference: loop) { (loop.isCurrent, await feed.onLoop()) }.value
        #expect(onLoop && actorOnLoop)
        #expect(await Task { loop.isCurrent }.value == false)
    }

    /// Work the loop's thread hands itself needs no wake-up: it runs before the loop waits again, from
    /// readiness handling, from other such work, and from the tick.
    @Test func workTheLoopHandsItselfRunsBeforeItWaits() async throws {
        let loop = try EventLoop()
        loop.start(name: "test-loop")
        defer { loop.stop() }
        let ranOnLoop = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            loop.execute { loop.execute { loop.execute { done.resume(returning: loop.isCurrent) } } }
        }
        #expect(ranOnLoop)
        let fromTick = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            loop.execute {
                loop.onTick = { _ in
                    loop.onTick = nil
                    loop.execute { done.resume(returning: loop.isCurrent) }
                }
            }
        }
        #expect(fromTick)
    }
}
