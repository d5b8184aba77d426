import HTTPCore
import Synchronization

/// One connection's event stream carrying many feeds (`GET /events?feed=…`): the connection's single
/// ``EventSink`` split into one ``FeedSlot`` per feed. Each feed sees its slot as an ordinary
/// subscriber (``Feed/subscribe(_:lastEventID:tagged:)``); the multiplexer forwards what the slots
/// send to the connection, in the order sent.
///
/// - A slot's `close()` ends that feed's part only (a deleted feed); once no slot is left after the
///   opening, the connection's stream ends.
/// - The connection's stream has one byte budget. When it overflowed and has drained, the slots that
///   sent something since they were last caught up may have lost events: each of them drops what its
///   feed sends until the feed has resumed it with a fresh snapshot; the others go on at once.
/// - When the connection ends, every slot ends (the feeds forget their subscriptions).
final class FeedMultiplexer: Sendable {
    private struct Slot {
        let sink: FeedSlot
        /// Something was forwarded since the slot was last caught up: a drop may have taken it.
        var dirty = false
        /// Waiting for its feed's fresh snapshot: what the feed sends meanwhile is dropped.
        var resyncing = false
        /// Drained before its feed registered a resync handler: ask as soon as it does.
        var resyncPending = false
        var onResync: (@Sendable (any EventSink) -> Void)?
        var onTermination: [@Sendable () -> Void] = []
    }

    private struct State {
        var slots: [Int: Slot] = [:]
        /// Feeds are still being opened: no slot left does not end the stream yet.
        var opening = true
        var ended = false
    }

    /// The connection's stream.
    let sink: any EventSink
    private let state = Mutex(State())
    /// Slot ids are negative: never equal to a transport's own stream ids, which share the feeds'
    /// subscriber tables with them.
    private static let slotIDs = Atomic<Int>(0)
    /// What resumes the connection after an overflow (nothing: each feed's snapshot follows).
    private static let nothing = EventPayload([])

    init(_ sink: any EventSink) {
        self.sink = sink
        sink.onResync { [self] _ in drained() }
        sink.onTermination { [self] in terminated() }
    }

    /// A new slot for `feed` (already ended if the connection has).
    func makeSlot(feed: String) -> FeedSlot {
        let slot = FeedSlot(id: Self.slotIDs.subtract(1, ordering: .relaxed).newValue, feed: feed, multiplexer: self)
        state.withLock { state in
            if !state.ended { state.slots[slot.id] = Slot(sink: slot) }
        }
        return slot
    }

    /// The feeds whose slots are open, in no particular order.
    var openFeeds: [String] { state.withLock { $0.slots.values.map(\.sink.feed) } }

    /// Queues bytes that belong to no slot (the announcement, a refusal), in order with the slots'.
    func send(_ payload: EventPayload) {
        state.withLock { state in
            if !state.ended { sink.send(payload) }
        }
    }

    /// Every listed feed has been opened (or refused): from now on, no slot left ends the stream.
    func finishOpening() {
        let end = state.withLock { state -> Bool in
            state.opening = false
            return state.slots.isEmpty && !state.ended
        }
        if end { sink.close() }
    }

    /// Sends `payload(feed)` for every open slot, then ends the stream (a token that expired).
    func end(with payload: (String) -> EventPayload) {
        state.withLock { state in
            guard !state.ended else { return }
            for slot in state.slots.values.sorted(by: { $0.sink.id > $1.sink.id }) { sink.send(payload(slot.sink.feed)) }
        }
        sink.close()
    }

    // MARK: From the slots

    fileprivate func send(_ payload: EventPayload, from id: Int) {
        state.withLock { state in
            guard var slot = state.slots[id], !slot.resyncing else { return }
            slot.dirty = true
            state.slots[id] = slot
            sink.send(payload)  // under the lock: the connection queues in the order the slots decided
        }
    }

    fileprivate func resume(_ id: Int, with payload: EventPayload) {
        state.withLock { state in
            guard var slot = state.slots[id] else { return }
            slot.resyncing = false
            slot.dirty = true
            state.slots[id] = slot
            sink.send(payload)
        }
    }

    fileprivate func close(_ id: Int) {
        let (actions, end) = state.withLock { state -> ([@Sendable () -> Void], Bool) in
            guard let slot = state.slots.removeValue(forKey: id) else { return ([], false) }
            return (slot.onTermination, state.slots.isEmpty && !state.opening && !state.ended)
        }
        for action in actions { action() }
        if end { sink.close() }
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

    /// The connection's stream fell behind and has drained: it goes on at once; each slot that may
    /// have lost events waits for its feed's snapshot.
    private func drained() {
        let resyncs = state.withLock { state -> [(FeedSlot, @Sendable (any EventSink) -> Void)] in
            var resyncs: [(FeedSlot, @Sendable (any EventSink) -> Void)] = []
            for (id, slot) in state.slots where slot.dirty {
                state.slots[id]?.dirty = false
                state.slots[id]?.resyncing = true
                if let action = slot.onResync { resyncs.append((slot.sink, action)) } else { state.slots[id]?.resyncPending = true }
            }
            sink.resume(with: Self.nothing)
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
final class FeedSlot: EventSink {
    let id: Int
    let feed: String
    private let multiplexer: FeedMultiplexer

    fileprivate init(id: Int, feed: String, multiplexer: FeedMultiplexer) {
        self.id = id
        self.feed = feed
        self.multiplexer = multiplexer
    }

    func send(_ payload: EventPayload) { multiplexer.send(payload, from: id) }
    /// Ends this feed's part only.
    func close() { multiplexer.close(id) }
    func resume(with payload: EventPayload) { multiplexer.resume(id, with: payload) }
    func onTermination(_ action: @escaping @Sendable () -> Void) { multiplexer.onTermination(id, action) }
    func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) { multiplexer.onResync(id, action) }
}
