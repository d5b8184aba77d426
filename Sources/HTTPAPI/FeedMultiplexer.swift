import HTTPCore
import Synchronization

/// One connection's event stream carrying many feeds (`GET /events?feed=…`): the connection's single
/// ``EventSink`` split into one ``FeedSlot`` per feed, which the feed's ``TaggedFanOut`` sees as an
/// ordinary sink. The rules (numbering, overflow and drain, closed slots, the end) are
/// ``MultiFeedStreamMachine``'s; this performs its actions: the writes to the connection under the
/// lock (so it queues in the order decided), the slots' handlers and the stream's end after it.
package final class FeedMultiplexer: Sendable {
    /// What a slot's owner registered on it.
    private struct Handlers {
        var onResync: (@Sendable (any EventSink) -> Void)?
        /// Drained before its owner registered a resync handler: ask as soon as it does.
        var resyncPending = false
        var onTermination: [@Sendable () -> Void] = []
    }

    private struct State {
        var machine = MultiFeedStreamMachine()
        var slots: [Int: (sink: FeedSlot, handlers: Handlers)] = [:]
    }

    /// The connection's stream.
    package let sink: any EventSink
    private let state = Mutex(State())
    private static let slotIDs = Atomic<Int>(0)

    package init(_ sink: any EventSink) {
        self.sink = sink
        sink.onResync { [self] _ in perform { $0.drained() } }
        sink.onOverflow { [self] number in state.withLock { $0.machine.overflowed(at: number) } }
        sink.onTermination { [self] in perform { $0.terminated() } }
    }

    /// A new slot for `feed` (already ended if the connection has).
    package func makeSlot(feed: String) -> FeedSlot {
        let slot = FeedSlot(id: Self.slotIDs.subtract(1, ordering: .relaxed).newValue, feed: feed, multiplexer: self)
        state.withLock { state in
            if state.machine.open(slot.id, feed: feed) { state.slots[slot.id] = (slot, Handlers()) }
        }
        return slot
    }

    /// The feeds whose slots are open, in the order opened.
    package var openFeeds: [String] { state.withLock { $0.machine.openFeeds } }

    /// Queues bytes that belong to no slot (the announcement), in order with the slots'.
    package func send(_ payload: EventPayload) { perform { $0.announce(payload) } }

    /// Queues a listed feed's refusal (`notfound`, `forbidden`, …), its only and last event on this
    /// stream: sent again after a drain, or at the stream's end, if the connection dropped it.
    package func refuse(_ payload: EventPayload) { perform { $0.refuse(payload) } }

    /// Every listed feed has been opened (or refused): from now on, no slot left ends the stream.
    package func finishOpening() { perform { $0.finishOpening() } }

    /// Ends the stream with `payload(feed)` for every open slot as its last events (a token that
    /// expired), written even while the connection is behind.
    package func end(with payload: (String) -> EventPayload) {
        if let last = state.withLock({ $0.machine.lastEventsOfOpenSlots(payload) }) { endStream(with: last) } else { sink.close() }
    }

    /// Ends the connection's stream; the last events of feeds whose end the connection dropped (their
    /// `deleted` or refusal) are written last, then `extra`.
    private func endStream(with extra: EventPayload? = nil) {
        sink.end { [self] in state.withLock { $0.machine.lastEvents(then: extra) } }
    }

    /// Runs an input of the machine and performs its output.
    private func perform(_ input: (inout MultiFeedStreamMachine) -> MultiFeedStreamMachine.Output) {
        let (output, resyncs, terminations) = state.withLock { state in
            let output = input(&state.machine)
            for write in output.writes {
                switch write {
                case .send(let payload): sink.send(payload)
                case .resume(let payload): sink.resume(with: payload)
                }
            }
            var resyncs: [(FeedSlot, @Sendable (any EventSink) -> Void)] = []
            for id in output.resync {
                guard let slot = state.slots[id] else { continue }
                if let action = slot.handlers.onResync { resyncs.append((slot.sink, action)) } else { state.slots[id]?.handlers.resyncPending = true }
            }
            let terminations = output.ended.flatMap { state.slots.removeValue(forKey: $0)?.handlers.onTermination ?? [] }
            return (output, resyncs, terminations)
        }
        for action in terminations { action() }
        if output.endStream { endStream() }
        for (slot, action) in resyncs { action(slot) }
    }

    // MARK: From the slots

    fileprivate func send(_ payload: EventPayload, from id: Int) { perform { $0.send(payload, from: id) } }

    fileprivate func resume(_ id: Int, with payload: EventPayload) { perform { $0.resume(id, with: payload) } }

    fileprivate func close(_ id: Int) { perform { $0.close(id) } }

    fileprivate func onTermination(_ id: Int, _ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.slots[id] != nil else { return true }
            state.slots[id]?.handlers.onTermination.append(action)
            return false
        }
        if runNow { action() }
    }

    fileprivate func onResync(_ id: Int, _ action: @escaping @Sendable (any EventSink) -> Void) {
        let pending = state.withLock { state -> FeedSlot? in
            guard let slot = state.slots[id] else { return nil }
            state.slots[id]?.handlers.onResync = action
            state.slots[id]?.handlers.resyncPending = false
            return slot.handlers.resyncPending ? slot.sink : nil
        }
        if let pending { action(pending) }
    }
}

/// One feed's part of a multi-feed stream, as its ``TaggedFanOut`` sees it: a sink like any other.
package final class FeedSlot: EventSink {
    package let id: Int
    package let feed: String
    private let multiplexer: FeedMultiplexer

    fileprivate init(id: Int, feed: String, multiplexer: FeedMultiplexer) {
        self.id = id
        self.feed = feed
        self.multiplexer = multiplexer
    }

    package func send(_ payload: EventPayload) { multiplexer.send(payload, from: id) }
    /// Ends this feed's part only.
    package func close() { multiplexer.close(id) }
    package func resume(with payload: EventPayload) { multiplexer.resume(id, with: payload) }
    package func onTermination(_ action: @escaping @Sendable () -> Void) { multiplexer.onTermination(id, action) }
    package func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) { multiplexer.onResync(id, action) }
}
