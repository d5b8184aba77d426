import Synchronization

/// A long-lived response (Server-Sent Events) that a handler keeps and writes to from any thread.
///
/// Events are queued to the connection on the server's loop. Each stream has a byte budget
/// (``HTTPServer/Configuration/streamBufferLimit``): a subscriber that does not read fast enough stops
/// receiving events once its queue is over budget; when the queue has drained, the stream's resync
/// handler is asked for a fresh state (``resume(with:)``), so a slow subscriber never delays the others
/// and never grows memory without bound. Without a resync handler, an overflowing stream is closed.
public final class EventStream: EventSink {
    /// Unique per server.
    public let id: Int
    /// The path of the request that opened the stream, as sent (``HTTPRequest/rawPath``; the rest of
    /// the request is not kept: an idle subscriber should cost as little memory as possible).
    public let path: String
    /// The loop that owns the stream's connection.
    let loop: LoopCore
    /// The stream's events are gzipped: an event is deflated only for such a stream (a payload that no
    /// subscriber takes gzipped keeps no deflated copy: about 1 KiB per feed snapshot).
    let gzip: Bool
    private let callbacks = Mutex<Callbacks>(Callbacks())
    /// Calls of ``send(_:)`` so far: each event carries its number to the loop, which names the first
    /// one an overflow dropped (``onOverflow(_:)``).
    private let sends = Atomic<Int>(0)

    private struct Callbacks {
        var terminated = false
        var onTermination: [@Sendable () -> Void] = []
        var onResync: (@Sendable (any EventSink) -> Void)?
        var onOverflow: (@Sendable (Int) -> Void)?
    }

    init(id: Int, path: String, loop: LoopCore, gzip: Bool) {
        self.id = id
        self.path = path
        self.loop = loop
        self.gzip = gzip
    }

    /// Queues an event (deflated here, off the loop, for a gzipped stream).
    public func send(_ payload: EventPayload) {
        if gzip { payload.prepareDeflated() }
        let number = sends.add(1, ordering: .relaxed).newValue
        loop.loop.execute { [loop, id] in loop.streamOperation(id) { $0.enqueueEvent(payload, number: number) } }
    }

    /// Ends the stream after what is queued has been written.
    public func close() {
        loop.loop.execute { [loop, id] in loop.streamOperation(id) { $0.endStream() } }
    }

    /// Ends the stream with `final` as its last event, written even while the stream is paused.
    public func end(with final: EventPayload) {
        if gzip { final.prepareDeflated() }
        loop.loop.execute { [loop, id] in loop.streamOperation(id) { $0.endStream(with: final) } }
    }

    /// Ends the stream with what `last()` returns, asked on the loop once every event sent before was
    /// written or dropped (an overflow among them has been reported by then).
    public func end(withLast last: @escaping @Sendable () -> EventPayload?) {
        loop.loop.execute { [loop, id] in loop.streamOperation(id) { $0.endStream(with: last()) } }
    }

    /// Clears an overflow and queues `payload` (a fresh state) as the next event.
    public func resume(with payload: EventPayload) {
        if gzip { payload.prepareDeflated() }
        loop.loop.execute { [loop, id] in loop.streamOperation(id) { $0.resumeStream(with: payload) } }
    }

    /// Registers work to do when the stream ends for any reason; runs at once if it already has.
    public func onTermination(_ action: @escaping @Sendable () -> Void) {
        let runNow = callbacks.withLock { state -> Bool in
            if state.terminated { return true }
            state.onTermination.append(action)
            return false
        }
        if runNow { action() }
    }

    /// Sets what to do when an overflowed stream has drained: typically `resume(with:)` a snapshot.
    public func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) {
        callbacks.withLock { $0.onResync = action }
    }

    /// Sets what to do when the stream overflows (it stops receiving events until it drains): called
    /// with the number of the first ``send(_:)`` that was dropped.
    public func onOverflow(_ action: @escaping @Sendable (Int) -> Void) {
        callbacks.withLock { $0.onOverflow = action }
    }

    var hasResyncHandler: Bool { callbacks.withLock { $0.onResync != nil } }

    /// The loop paused the stream at the `number`th ``send(_:)``.
    func reportOverflow(at number: Int) {
        callbacks.withLock { $0.onOverflow }?(number)
    }

    func requestResync() {
        guard let action = callbacks.withLock({ $0.onResync }) else { return }
        action(self)
    }

    func terminate() {
        let actions = callbacks.withLock { state -> [@Sendable () -> Void] in
            if state.terminated { return [] }
            state.terminated = true
            defer { state.onTermination = []; state.onResync = nil; state.onOverflow = nil }
            return state.onTermination
        }
        for action in actions { action() }
    }
}
