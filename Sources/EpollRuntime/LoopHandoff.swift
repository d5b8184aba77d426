/// Which loop takes a connection the acceptor has accepted, given the caps' verdict: admitted
/// connections go round-robin over every loop (the acceptor's own among them: the spread is exact,
/// which `diffstream_loop_connections_open` shows); a refused one stays on the acceptor's loop, which
/// only answers it 503; a dropped one (far over a cap) is closed at once.
struct LoopHandoff: Equatable, Sendable {
    enum Destination: Equatable, Sendable {
        /// Close the socket without an answer.
        case close
        /// Hand the socket to loop `index`.
        case loop(Int)
    }

    /// How many loops there are (at least 1).
    let loops: Int
    /// The index of the loop that accepts.
    let acceptor: Int
    /// The loop the next admitted connection goes to.
    private(set) var next = 0

    init(loops: Int, acceptor: Int = 0) {
        precondition(loops >= 1 && (0..<loops).contains(acceptor))
        self.loops = loops
        self.acceptor = acceptor
    }

    /// Where a connection with `verdict` goes; an admitted one moves the round-robin on.
    /// - Complexity: O(1).
    mutating func destination(for verdict: ConnectionQuota.Verdict) -> Destination {
        switch verdict {
        case .admit:
            let index = next
            next = (next + 1) % loops
            return .loop(index)
        case .refuseServerFull, .refuseAddressFull:
            return .loop(acceptor)
        case .drop:
            return .close
        }
    }
}
