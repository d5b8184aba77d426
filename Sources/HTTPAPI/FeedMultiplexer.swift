import FeedCore
import ViewModelHosting
import HTTPCore
import Synchronization

/// One connection's event stream carrying many feeds (`GET /events?feed=…`): the connection's single
/// ``EventSink`` split into one ``FeedSlot`` per feed. Each feed sees its slot as an ordinary
/// subscriber (``Feed/subscribe(_:lastEventID:tagged:)``); the multiplexer forwards what the slots
/// send to the connection, in the order sent.
///
/// - A slot's `close()` ends that feed's part only (a deleted feed); once no slot is left after the
///   opening, the connection's stream ends.
/// - The connection's stream has one byte budget. When it overflowed and has drained, the slots whose
///   events it dropped (those sent at or after the first one dropped, which the connection names:
///   ``EventSink/onOverflow(_:)``; a connection that cannot tell: every slot that sent something since
///   the last drain) drop what their feed sends until the feed has resumed them with a fresh
///   snapshot; the others go on at once. A slot that closed meanwhile and whose last event (its
///   `deleted`) was dropped gets that event again, and so does a refused feed's refusal; when the
///   stream ends instead (no slot left, a token that expired), they are its last events.
/// - When the connection ends, every slot ends (the feeds forget their subscriptions).
package final class FeedMultiplexer: Sendable {
    fileprivate struct Slot {
        let sink: FeedSlot
        /// The number of the slot's last event among the connection's `send` calls (0: none yet).
        var lastSent = 0
        /// Its last event: sent again after a drain should the overflow have dropped it and the slot
        /// have closed (the event that ended it).
        var lastPayload: EventPayload?
        /// Waiting for its feed's fresh snapshot: what the feed sends meanwhile is dropped.
        var resyncing = false
        /// The last event dropped while resyncing (sent after all if the slot closes instead).
        var droppedWhileResyncing: EventPayload?
        /// Drained before its feed registered a resync handler: ask as soon as it does.
        var resyncPending = false
        var onResync: (@Sendable (any EventSink) -> Void)?
        var onTermination: [@Sendable () -> Void] = []
    }

    fileprivate struct State {
        var slots: [Int: Slot] = [:]
        /// Calls of the connection's `send` so far (the numbering ``EventSink/onOverflow(_:)`` uses).
        var sent = 0
        /// `sent` when the stream last drained.
        var sentAtDrain = 0
        /// The first event the current overflow dropped, once the connection has said.
        var firstDropped: Int?
        /// Slots closed since the last drain (at most one per feed the stream carries): their last
        /// event and its number.
        var closed: [(number: Int, payload: EventPayload)] = []
        /// Feeds are still being opened: no slot left does not end the stream yet.
        var opening = true
        var ended = false
    }

    /// The connection's stream.
    package let sink: any EventSink
    private let state = Mutex(State())
    /// Slot ids are negative: never equal to a transport's own stream ids, which share the feeds'
    /// subscriber tables with them.
    private static let slotIDs = Atomic<Int>(0)
    /// What resumes the connection after an overflow (nothing: each feed's snapshot follows).
    private static let nothing = EventPayload([])

    package init(_ sink: any EventSink) {
        self.sink = sink
        sink.onResync { [self] _ in drained() }
        sink.onOverflow { [self] number in overflowed(at: number) }
        sink.onTermination { [self] in terminated() }
    }

    /// A new slot for `feed` (already ended if the connection has).
    package func makeSlot(feed: String) -> FeedSlot {
        let slot = FeedSlot(id: Self.slotIDs.subtract(1, ordering: .relaxed).newValue, feed: feed, multiplexer: self)
        state.withLock { state in
            if !state.ended { state.slots[slot.id] = Slot(sink: slot) }
        }
        return slot
    }

    /// The feeds whose slots are open, in no particular order.
    package var openFeeds: [String] { state.withLock { $0.slots.values.map(\.sink.feed) } }

    /// Queues bytes that belong to no slot (the announcement), in order with the slots'.
    package func send(_ payload: EventPayload) {
        state.withLock { state in
            if !state.ended { state.forward(payload, to: sink) }
        }
    }

    /// Queues a listed feed's refusal (`notfound`, `forbidden`, …), its only and last event on this
    /// stream: sent again after a drain, or at the stream's end, if the connection dropped it.
    package func refuse(_ payload: EventPayload) {
        state.withLock { state in
            guard !state.ended else { return }
            state.closed.append((state.forward(payload, to: sink), payload))
        }
    }

    /// Every listed feed has been opened (or refused): from now on, no slot left ends the stream.
    package func finishOpening() {
        let end = state.withLock { state -> Bool in
            state.opening = false
            return state.slots.isEmpty && !state.ended
        }
        if end { endStream() }
    }

    /// Ends the connection's stream; the last events of feeds whose end the connection dropped (their
    /// `deleted` or refusal) are written last.
    private func endStream(with extra: EventPayload? = nil) {
        sink.end { [self] in
            let lost = state.withLock { state -> [UInt8] in
                guard let cut = state.firstDropped else { return [] }
                return state.closed.filter { $0.number >= cut }.flatMap(\.payload.bytes)
            }
            let bytes = lost + (extra?.bytes ?? [])
            return bytes.isEmpty ? nil : EventPayload(bytes)
        }
    }

    /// Ends the stream with `payload(feed)` for every open slot as its last events (a token that
    /// expired), written even while the connection is behind.
    package func end(with payload: (String) -> EventPayload) {
        let last = state.withLock { state -> EventPayload? in
            guard !state.ended else { return nil }
            return EventPayload(state.slots.values.sorted(by: { $0.sink.id > $1.sink.id }).flatMap { payload($0.sink.feed).bytes })
        }
        if let last { endStream(with: last) } else { sink.close() }
    }

    // MARK: From the slots

    fileprivate func send(_ payload: EventPayload, from id: Int) {
        state.withLock { state in
            guard var slot = state.slots[id] else { return }
            if slot.resyncing {
                slot.droppedWhileResyncing = payload
            } else {
                slot.lastSent = state.forward(payload, to: sink)  // under the lock: the connection queues in the order the slots decided
                slot.lastPayload = payload
            }
            state.slots[id] = slot
        }
    }

    fileprivate func resume(_ id: Int, with payload: EventPayload) {
        state.withLock { state in
            guard var slot = state.slots[id] else { return }
            slot.resyncing = false
            slot.droppedWhileResyncing = nil
            slot.lastSent = state.forward(payload, to: sink)
            slot.lastPayload = payload
            state.slots[id] = slot
        }
    }

    fileprivate func close(_ id: Int) {
        let (actions, end) = state.withLock { state -> ([@Sendable () -> Void], Bool) in
            guard var slot = state.slots.removeValue(forKey: id) else { return ([], false) }
            if slot.resyncing, let last = slot.droppedWhileResyncing, !state.ended {
                // The event that ended it (`deleted`) came while it waited for its snapshot: send it now.
                slot.lastSent = state.forward(last, to: sink)
                slot.lastPayload = last
            }
            if let last = slot.lastPayload, slot.lastSent > state.sentAtDrain { state.closed.append((slot.lastSent, last)) }
            return (slot.onTermination, state.slots.isEmpty && !state.opening && !state.ended)
        }
        for action in actions { action() }
        if end { endStream() }
    }

    fileprivate func onTermination(_ id: Int, _ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard state.slots[id] != nil else { return true }
            state.slots[id]?.onTermination.append(action)
            return false
        }
        if runNow { action() }
    }

    fileprivate func onResync(_ id: Int, _ action: @escaping @Sendable (any EventSink) -> Void) {
        let pending = state.withLock { state -> FeedSlot? in
            guard var slot = state.slots[id] else { return nil }
            slot.onResync = action
            defer { slot.resyncPending = false; state.slots[id] = slot }
            return slot.resyncPending ? slot.sink : nil
        }
        if let pending { action(pending) }
    }

    // MARK: From the connection

    /// The connection paused at its `number`th event.
    private func overflowed(at number: Int) {
        state.withLock { state in state.firstDropped = min(state.firstDropped ?? number, number) }
    }

    /// The connection's stream fell behind and has drained: it goes on at once; each slot that lost
    /// events waits for its feed's snapshot, and the last event of each slot that closed meanwhile and
    /// lost it is sent again.
    private func drained() {
        let resyncs = state.withLock { state -> [(FeedSlot, @Sendable (any EventSink) -> Void)] in
            let cut = state.firstDropped ?? state.sentAtDrain + 1
            var resyncs: [(FeedSlot, @Sendable (any EventSink) -> Void)] = []
            for (id, slot) in state.slots where slot.lastSent >= cut && !slot.resyncing {
                state.slots[id]?.resyncing = true
                if let action = slot.onResync { resyncs.append((slot.sink, action)) } else { state.slots[id]?.resyncPending = true }
            }
            sink.resume(with: Self.nothing)
            let lost = state.closed.filter { $0.number >= cut }
            state.closed = []
            state.firstDropped = nil
            state.sentAtDrain = state.sent
            for (_, payload) in lost { state.closed.append((state.forward(payload, to: sink), payload)) }
            return resyncs
        }
        for (slot, action) in resyncs { action(slot) }
    }

    private func terminated() {
        let actions = state.withLock { state -> [@Sendable () -> Void] in
            state.ended = true
            defer { state.slots = [:] }
            return state.slots.values.flatMap(\.onTermination)
        }
        for action in actions { action() }
    }
}

/// One feed's part of a multi-feed stream, as its ``Feed`` sees it: a subscriber like any other.
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

extension FeedMultiplexer.State {
    /// Sends `payload` on the connection's stream and returns its number there.
    @discardableResult
    package mutating func forward(_ payload: EventPayload, to sink: any EventSink) -> Int {
        sent += 1
        sink.send(payload)
        return sent
    }
}
