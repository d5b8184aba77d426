/// One subscriber's end of an event stream, as the feed layer sees it: the seam between feeds and
/// the transport. The epoll runtime's `EventStream` is one implementation; an in-memory one serves
/// tests of feeds and view models without sockets (`MemorySink`, in the tests' `TestSupport`).
///
/// Every method may be called from any thread. A sink queues events in the order `send` is called.
public protocol EventSink: AnyObject, Sendable {
    /// Unique among the sinks of one transport.
    var id: Int { get }
    /// Queues an event.
    func send(_ payload: EventPayload)
    /// Ends the stream after what is queued has been written.
    func close()
    /// Ends the stream with `final` as its last event (`deleted`, `unauthorized`), written even when the
    /// stream fell behind and drops events (its budget does not hold it back), then closes it.
    func end(with final: EventPayload)
    /// Ends the stream like ``end(with:)``, with the last event `last()` returns (none: nil), asked once
    /// every event sent before has been written or dropped (a sink that drops events has said which,
    /// ``onOverflow(_:)``), so it can repeat what was dropped.
    func end(withLast last: @escaping @Sendable () -> EventPayload?)
    /// Clears an overflow and queues `payload` (a fresh state) as the next event.
    func resume(with payload: EventPayload)
    /// Registers work to do when the stream ends for any reason; runs at once if it already has.
    func onTermination(_ action: @escaping @Sendable () -> Void)
    /// Sets what to do when a stream that fell behind has drained: typically `resume(with:)` a snapshot.
    /// A sink that never falls behind never calls it.
    func onResync(_ action: @escaping @Sendable (any EventSink) -> Void)
    /// Sets what to hear when the stream falls behind: `action(n)`, where the `n`th call of ``send(_:)``
    /// (counted from 1 since the sink was made) is the first one dropped. Those before it reach the
    /// client; it and every later one until ``resume(with:)`` do not. Called before the resync
    /// handler of the same overflow. A sink that cannot tell never calls it (the default).
    func onOverflow(_ action: @escaping @Sendable (Int) -> Void)
}

extension EventSink {
    public func onOverflow(_ action: @escaping @Sendable (Int) -> Void) {}

    /// ``send(_:)`` then ``close()``: for a sink that never drops events, or drops them knowingly.
    public func end(with final: EventPayload) {
        send(final)
        close()
    }

    /// ``send(_:)`` of what `last()` returns, then ``close()``.
    public func end(withLast last: @escaping @Sendable () -> EventPayload?) {
        if let payload = last() { send(payload) }
        close()
    }
}

/// Hands one event to many sinks at once: a feed's batch is handed over once for all its
/// subscribers, and the transport shares the same bytes among them (encode once).
public protocol EventBroadcaster: Sendable {
    /// Queues `payload` to every sink of `sinks`. `written`, if given, is called once every sink has
    /// been written to (or has queued it); never when `sinks` is empty.
    func broadcast(_ payload: EventPayload, to sinks: [any EventSink], written: (@Sendable () -> Void)?)
}

extension EventBroadcaster {
    public func broadcast(_ payload: EventPayload, to sinks: [any EventSink]) {
        broadcast(payload, to: sinks, written: nil)
    }
}
