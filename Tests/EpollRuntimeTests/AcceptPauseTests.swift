@testable import EpollRuntime
#if canImport(Glibc)
import Glibc
#endif
import Testing

struct AcceptPauseTests {
    /// Running out of descriptors or memory pauses accepting; any other failure is only logged.
    @Test(arguments: [
        (EMFILE, true), (ENFILE, true), (ENOBUFS, true), (ENOMEM, true),
        (EINVAL, false), (EPERM, false), (EPROTO, false), (EBADF, false),
    ] as [(Int32, Bool)])
    func whichFailuresPause(errno: Int32, pauses: Bool) {
        #expect(AcceptPause.pauses(errno: errno) == pauses)
    }

    /// Paused at 5: nothing is accepted before 5.1; the first tick at or after 5.1 ends the pause,
    /// once.
    @Test(arguments: [
        (5.0, false), (5.05, false), (5.099, false), (5.1, true), (6, true),
    ] as [(Double, Bool)])
    func aPauseLastsOneHundredMilliseconds(now: Double, over: Bool) {
        var pause = AcceptPause()
        #expect(pause.allowsAccepting(now: 5))
        pause.pause(now: 5)
        #expect(pause.allowsAccepting(now: now) == over)
        #expect(pause.resume(now: now) == over)
        if over {
            #expect(pause.resume(now: now + 1) == false, "the end of a pause is told once")
            #expect(pause.until == nil)
        } else {
            #expect(pause.until == 5 + AcceptPause.duration)
        }
    }

    @Test func withoutAPauseATickResumesNothing() {
        var pause = AcceptPause()
        #expect(pause.resume(now: 100) == false)
        #expect(pause.allowsAccepting(now: 0) && pause.until == nil)
    }
}
