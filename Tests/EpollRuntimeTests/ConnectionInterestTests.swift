@testable import EpollRuntime
import HTTPCore
import Testing

struct ConnectionInterestTests {
    static let read = Epoll.`in` | Epoll.rdhup

    /// (phase, output queued, registered now, keeping input) → wanted.
    @Test(arguments: [
        (ConnectionMachine.Phase.awaitingRequest, false, ConnectionInterestTests.read, true, ConnectionInterestTests.read),
        (.awaitingRequest, true, read, true, read | Epoll.out),
        (.awaitingRequest, false, Epoll.rdhup, true, read),  // input dropped while answering comes back
        // Answering a keep-alive request: the input interest stays, no epoll_ctl.
        (.processing, false, read, true, read),
        (.processing, true, read, true, read | Epoll.out),
        // Input arrived while answering: dropped until the answer is out, and not taken back meanwhile.
        (.processing, false, read, false, Epoll.rdhup),
        (.processing, false, Epoll.rdhup, true, Epoll.rdhup),
        (.processing, true, Epoll.rdhup | Epoll.out, true, Epoll.rdhup | Epoll.out),
        (.streaming, false, Epoll.rdhup, true, read),
        (.streaming, true, read, false, read | Epoll.out),
        (.closing, true, read, true, Epoll.rdhup | Epoll.out),
        (.draining, false, Epoll.rdhup, true, read),
    ])
    func wantsWhatThePhaseNeeds(phase: ConnectionMachine.Phase, outputQueued: Bool, current: UInt32, keepingInput: Bool, wanted: UInt32) {
        #expect(ConnectionInterest.wanted(phase: phase, outputQueued: outputQueued, current: current, keepingInput: keepingInput) == wanted)
    }
}
