@testable import EpollRuntime
import Testing

struct LoopShutdownTests {
    /// Begun at 10 with a timeout of 3: a tick finishes the shutdown once no connection is left, or at
    /// 13 whatever is left.
    @Test(arguments: [
        (10, 0, true), (12.9, 0, true), (12.9, 5, false), (13, 5, true), (40, 1, true), (10, 1, false),
    ] as [(Double, Int, Bool)])
    func finishesWhenNoConnectionRemainsOrTheTimeoutHasPassed(now: Double, open: Int, finishes: Bool) {
        var shutdown = LoopShutdown()
        #expect(shutdown.begin(now: 10, timeout: 3) == true)
        #expect(shutdown.isShuttingDown)
        #expect(shutdown.tick(now: now, openConnections: open) == finishes)
        #expect(shutdown.phase == (finishes ? .finished : .draining(deadline: 13)))
    }

    @Test func aRunningLoopNeverFinishes() {
        var shutdown = LoopShutdown()
        #expect(!shutdown.isShuttingDown)
        #expect(shutdown.tick(now: 1e9, openConnections: 0) == false)
        #expect(shutdown.phase == .running)
    }

    /// The completion runs once: later ticks do nothing, and neither does a second shutdown.
    @Test func finishesOnceAndASecondShutdownChangesNothing() {
        var shutdown = LoopShutdown()
        #expect(shutdown.begin(now: 0, timeout: 3) == true)
        #expect(shutdown.begin(now: 1, timeout: 100) == false, "already begun")
        #expect(shutdown.phase == .draining(deadline: 3), "the first deadline holds")
        #expect(shutdown.tick(now: 2, openConnections: 4) == false)
        #expect(shutdown.tick(now: 2.5, openConnections: 0) == true)
        #expect(shutdown.tick(now: 5, openConnections: 0) == false)
        #expect(shutdown.begin(now: 6, timeout: 1) == false)
        #expect(shutdown.isShuttingDown && shutdown.phase == .finished)
    }
}
