@testable import EpollRuntime
import HTTPCore
import Testing

struct LoopHandoffTests {
    /// Admitted connections go round-robin over every loop, the acceptor's own among them.
    @Test(arguments: [1, 2, 3, 8])
    func admittedConnectionsGoRoundRobin(loops: Int) {
        var handoff = LoopHandoff(loops: loops)
        let destinations = (0..<(3 * loops + 1)).map { _ in handoff.destination(for: .admit) }
        #expect(destinations == (0..<(3 * loops + 1)).map { .loop($0 % loops) })
    }

    /// A refused connection stays on the acceptor's loop (which answers it 503) and does not move the
    /// round-robin on; a dropped one is closed.
    @Test(arguments: [
        (ConnectionQuota.Verdict.refuseServerFull, LoopHandoff.Destination.loop(2)),
        (.refuseAddressFull, .loop(2)),
        (.drop, .close),
    ])
    func refusedOnesStayOnTheAcceptor(verdict: ConnectionQuota.Verdict, destination: LoopHandoff.Destination) {
        var handoff = LoopHandoff(loops: 4, acceptor: 2)
        #expect(handoff.destination(for: .admit) == .loop(0))
        #expect(handoff.destination(for: verdict) == destination)
        #expect(handoff.destination(for: .admit) == .loop(1))
    }
}
