import HTTPCore

/// What a connection asks epoll for (level-triggered), from its machine's phase: a pure rule, tested
/// without sockets.
enum ConnectionInterest {
    /// The events to watch: always a peer's half-close (`EPOLLRDHUP`); input in the phases that read
    /// (``ConnectionMachine/Phase/wantsInput``); output while bytes are queued.
    ///
    /// While a request is being answered (`processing`) the socket is not read, but its input interest
    /// is kept when it is registered and `keepingInput` (no input has arrived meanwhile): a client that
    /// waits for each answer (keep-alive, not pipelined: nearly all) then costs no `epoll_ctl` per
    /// request, where dropping the interest and adding it back cost two. Input that does arrive while
    /// answering (pipelined) is reported once, and the connection then asks again with `keepingInput`
    /// false, so that level-triggered epoll does not report it on every wait until the answer is written.
    static func wanted(phase: ConnectionMachine.Phase, outputQueued: Bool, current: UInt32, keepingInput: Bool) -> UInt32 {
        var wanted = Epoll.rdhup
        if phase.wantsInput || (keepingInput && phase == .processing && current & Epoll.`in` != 0) { wanted |= Epoll.`in` }
        if outputQueued { wanted |= Epoll.out }
        return wanted
    }
}
