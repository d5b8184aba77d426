/// The bytes of one open event stream, as a pure state machine: which bytes go out for an event, a
/// heartbeat, a resync or the end, whether the subscriber has fallen behind, and when its next
/// heartbeat is due. No sockets and no clock of its own: the caller passes the time and the number of
/// bytes still queued to the socket.
///
/// Heartbeats are scheduled per stream from its own deadline: a comment goes out once `heartbeat`
/// seconds have passed since the last thing written to this stream (event or heartbeat), so the gap a
/// client sees is at most `heartbeat` plus the caller's timer resolution.
///
/// With gzip, every event is an independent deflate block spliced into one gzip member (RFC 1952),
/// whose CRC-32 and length are combined here as the blocks go out.
package struct SSEStreamWriter: Sendable {
    package enum Decision: Equatable, Sendable {
        /// Queue these bytes.
        case write([UInt8])
        /// The subscriber is over its byte budget: the event is dropped and the stream is paused
        /// until its queue drains (then ``resume(with:now:)``).
        case overflowed
        /// Paused after an overflow: the event is dropped.
        case paused
    }

    package let gzip: Bool
    package let heartbeat: Double
    package let bufferLimit: Int
    /// When the next heartbeat is due unless an event goes out first.
    package private(set) var nextHeartbeat: Double
    package private(set) var isPaused = false
    package private(set) var isEnded = false
    private var crc: UInt32 = 0
    private var length = 0

    package init(gzip: Bool, heartbeat: Double, bufferLimit: Int, now: Double) {
        self.gzip = gzip
        self.heartbeat = heartbeat
        self.bufferLimit = bufferLimit
        self.nextHeartbeat = now + heartbeat
    }

    /// The bytes that open the stream body (the gzip header, or nothing).
    package func opening() -> [UInt8] { gzip ? Gzip.header : [] }

    /// What to do with an event when `queued` bytes are still waiting for the socket. An event bigger
    /// than the whole budget still goes out when nothing else is queued.
    package mutating func event(_ payload: EventPayload, queued: Int, now: Double) -> Decision {
        guard !isEnded else { return .paused }
        if isPaused { return .paused }
        if queued > 0 && queued + payload.bytes.count > bufferLimit {
            isPaused = true
            return .overflowed
        }
        return .write(encode(payload, now: now))
    }

    /// The heartbeat comment if one is due at `now` (and the stream is not paused), else nil.
    package mutating func heartbeatIfDue(_ payload: EventPayload, queued: Int, now: Double) -> [UInt8]? {
        guard !isEnded, !isPaused, now >= nextHeartbeat else { return nil }
        // A heartbeat never pauses the stream: with the queue that full, it only shows the connection
        // is alive, which the queued bytes will do (and a pause must come from a counted event).
        guard queued == 0 || queued + payload.bytes.count <= bufferLimit else { return nil }
        if case .write(let bytes) = event(payload, queued: queued, now: now) { return bytes }
        return nil
    }

    /// Clears a pause and returns the fresh state's bytes.
    package mutating func resume(with payload: EventPayload, now: Double) -> [UInt8] {
        guard !isEnded else { return [] }
        isPaused = false
        return encode(payload, now: now)
    }

    /// The last event, written whatever the pause and the budget, followed by the trailer (``end()``).
    package mutating func end(with final: EventPayload, now: Double) -> [UInt8] {
        guard !isEnded else { return [] }
        isPaused = false
        return encode(final, now: now) + end()
    }

    /// The bytes that end the stream (the gzip trailer, or nothing). Nothing is written after it.
    package mutating func end() -> [UInt8] {
        guard !isEnded else { return [] }
        isEnded = true
        guard gzip else { return [] }
        var trailer = Gzip.finalEmptyBlock
        Gzip.appendTrailer(crc: crc, length: length, to: &trailer)
        return trailer
    }

    private mutating func encode(_ payload: EventPayload, now: Double) -> [UInt8] {
        nextHeartbeat = now + heartbeat
        guard gzip else { return payload.bytes }
        let compressed = payload.deflated
        crc = Gzip.combine(crc, compressed.crc, lengthB: compressed.length)
        length += compressed.length
        return compressed.block
    }
}
