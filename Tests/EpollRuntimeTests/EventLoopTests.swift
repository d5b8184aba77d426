@testable import EpollRuntime
import Testing

struct EventLoopTests {
    /// The loop sleeps until its next tick, never wakes before it to spin: a wait rounds up to the
    /// next whole millisecond, and only a deadline that has passed waits 0.
    @Test(arguments: [
        (0.25, 250), (0.0995, 100), (0.0009, 1), (0.000_001, 1), (0.0, 0), (-0.5, 0), (1e12, Int(Int32.max)),
    ] as [(Double, Int)])
    func waitsUntilTheDeadlineRoundedUpToAMillisecond(remaining: Double, milliseconds: Int) {
        #expect(Int(EventLoop.waitMilliseconds(until: 5 + remaining, now: 5)) == milliseconds)
    }
}
