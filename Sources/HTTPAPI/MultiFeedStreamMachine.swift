import HTTPCore

/// The rules of one multi-feed stream (`GET /events?feed=…`) as a pure state machine: no locks, no
/// sinks, no clock. It takes what happens — a slot (one feed's part) opened, sending, resumed or
/// closed; a refusal; the opening finished; the connection overflowing, draining or ending — and returns
/// what to do (``Output``): what to queue on the connection, in order, which slots' feeds must resend a
/// snapshot, which slots ended, whether the stream ends. ``FeedMultiplexer`` performs it.
///
/// - Each payload queued on the connection is numbered (1, 2, …) the way ``EventSink/onOverflow(_:)``
///   numbers the connection's `send` calls: the performer queues the ``Output/writes`` in order, one
///   `send` each (a ``Write/resume(_:)`` is not a `send` and is not counted).
/// - When the connection has overflowed and drained, the slots whose events it dropped (those sent at
///   or after the first one dropped; a connection that cannot tell: every slot that sent something
///   since the last drain) drop what their feed sends until it has resumed them with a fresh snapshot;
///   the others go on at once. A slot closed meanwhile whose last event (its `deleted`) was dropped
///   gets that event again, and so does a refused feed's refusal; when the stream ends instead (no
///   slot left, a token that expired), they are its last events (``lastEvents(then:)``).
/// - Once no slot is left after the opening, the stream ends; once the connection has ended, every
///   slot has, and a slot opened later is born ended.
package struct MultiFeedStreamMachine {
    /// One write to the connection's stream.
    package enum Write {
        /// `send`: one numbered event (or several events in one payload).
        case send(EventPayload)
        /// `resume(with:)`: clears the overflow (the payload is empty: each feed's snapshot follows).
        case resume(EventPayload)
    }

    /// What the performer does after an input, in this order: the writes (under the same lock as the
    /// input, so the connection queues in the order decided here), then the rest.
    package struct Output {
        /// To queue on the connection, in order.
        package var writes: [Write] = []
        /// Slots whose feeds must resend a fresh snapshot (``FeedSlot``'s resync handler).
        package var resync: [Int] = []
        /// Slots that ended: their termination handlers run.
        package var ended: [Int] = []
        /// The connection's stream ends, with ``MultiFeedStreamMachine/lastEvents(then:)`` last.
        package var endStream = false
    }

    struct Slot {
        let feed: String
        /// In the order opened (the order of a token expiry's last events).
        let order: Int
        /// The number of the slot's last event on the connection (0: none yet).
        var lastSent = 0
        /// Its last event: sent again after a drain should the overflow have dropped it and the slot
        /// have closed (the event that ended it).
        var lastPayload: EventPayload?
        /// Waiting for its feed's fresh snapshot: what the feed sends meanwhile is dropped.
        var resyncing = false
        /// The last event dropped while resyncing (sent after all if the slot closes instead).
        var droppedWhileResyncing: EventPayload?
    }

    var slots: [Int: Slot] = [:]
    var opened = 0
    /// Payloads queued on the connection so far (the numbering of ``EventSink/onOverflow(_:)``).
    var sent = 0
    /// `sent` when the stream last drained.
    var sentAtDrain = 0
    /// The first event the current overflow dropped, once the connection has said.
    var firstDropped: Int?
    /// Slots closed and refusals sent since the last drain (at most one per feed the stream carries):
    /// their last event and its number.
    var closed: [(number: Int, payload: EventPayload)] = []
    /// Feeds are still being opened: no slot left does not end the stream yet.
    var opening = true
    /// The connection has ended.
    package private(set) var ended = false

    /// What resumes the connection after an overflow (nothing: each feed's snapshot follows).
    static let nothing = EventPayload([])

    package init() {}

    /// The feeds of the open slots, in the order opened.
    package var openFeeds: [String] { slots.values.sorted { $0.order < $1.order }.map(\.feed) }

    // MARK: Inputs from the stream's owner

    /// A slot `id` (unique on this stream) for `feed`. False: the connection has ended, the slot is
    /// born ended (the performer runs its termination handlers as they come).
    package mutating func open(_ id: Int, feed: String) -> Bool {
        guard !ended else { return false }
        opened += 1
        slots[id] = Slot(feed: feed, order: opened)
        return true
    }

    /// Bytes that belong to no slot (the announcement), in order with the slots'.
    package mutating func announce(_ payload: EventPayload) -> Output {
        var output = Output()
        if !ended { forward(payload, &output) }
        return output
    }

    /// A listed feed's refusal (`notfound`, `forbidden`, …), its only and last event on this stream:
    /// sent again after a drain, or at the stream's end, if the connection dropped it.
    package mutating func refuse(_ payload: EventPayload) -> Output {
        var output = Output()
        guard !ended else { return output }
        closed.append((forward(payload, &output), payload))
        return output
    }

    /// Every listed feed has been opened (or refused): from now on, no slot left ends the stream.
    package mutating func finishOpening() -> Output {
        opening = false
        var output = Output()
        output.endStream = slots.isEmpty && !ended
        return output
    }

    /// The stream ends with `payload(feed)` of every open slot as its last events, in the order opened
    /// (a token that expired). Nil: the connection has ended already (close it).
    package func lastEventsOfOpenSlots(_ payload: (String) -> EventPayload) -> EventPayload? {
        guard !ended else { return nil }
        return EventPayload(openFeeds.flatMap { payload($0).bytes })
    }

    /// The last events to write as the stream ends: those of feeds whose end the connection dropped
    /// (their `deleted` or refusal), then `extra`'s bytes. Nil: none.
    package func lastEvents(then extra: EventPayload? = nil) -> EventPayload? {
        let lost = firstDropped.map { cut in closed.filter { $0.number >= cut }.flatMap(\.payload.bytes) } ?? []
        let bytes = lost + (extra?.bytes ?? [])
        return bytes.isEmpty ? nil : EventPayload(bytes)
    }

    // MARK: Inputs from the slots

    /// Slot `id` sends `payload`: forwarded, or dropped while the slot waits for its snapshot.
    package mutating func send(_ payload: EventPayload, from id: Int) -> Output {
        var output = Output()
        guard var slot = slots[id] else { return output }
        if slot.resyncing {
            slot.droppedWhileResyncing = payload
        } else {
            slot.lastSent = forward(payload, &output)
            slot.lastPayload = payload
        }
        slots[id] = slot
        return output
    }

    /// Slot `id`'s feed resumes it with a fresh snapshot.
    package mutating func resume(_ id: Int, with payload: EventPayload) -> Output {
        var output = Output()
        guard var slot = slots[id] else { return output }
        slot.resyncing = false
        slot.droppedWhileResyncing = nil
        slot.lastSent = forward(payload, &output)
        slot.lastPayload = payload
        slots[id] = slot
        return output
    }

    /// Slot `id` ends (its feed was deleted, or it leaves); the last slot to go after the opening ends
    /// the stream.
    package mutating func close(_ id: Int) -> Output {
        var output = Output()
        guard var slot = slots.removeValue(forKey: id) else { return output }
        if slot.resyncing, let last = slot.droppedWhileResyncing, !ended {
            // The event that ended it (`deleted`) came while it waited for its snapshot: send it now.
            slot.lastSent = forward(last, &output)
            slot.lastPayload = last
        }
        if let last = slot.lastPayload, slot.lastSent > sentAtDrain { closed.append((slot.lastSent, last)) }
        output.ended = [id]
        output.endStream = slots.isEmpty && !opening && !ended
        return output
    }

    // MARK: Inputs from the connection

    /// The connection dropped its `number`th event and every later one (until resumed).
    package mutating func overflowed(at number: Int) {
        firstDropped = min(firstDropped ?? number, number)
    }

    /// The connection fell behind and has drained: it goes on at once; each slot that lost events waits
    /// for its feed's snapshot, and the last event of each slot that closed meanwhile and lost it (or a
    /// refusal lost) is sent again.
    package mutating func drained() -> Output {
        var output = Output()
        let cut = firstDropped ?? sentAtDrain + 1
        for (id, slot) in slots where slot.lastSent >= cut && !slot.resyncing {
            slots[id]?.resyncing = true
            output.resync.append(id)
        }
        output.resync.sort { slots[$0]!.order < slots[$1]!.order }
        output.writes.append(.resume(Self.nothing))
        let lost = closed.filter { $0.number >= cut }
        closed = []
        firstDropped = nil
        sentAtDrain = sent
        for (_, payload) in lost { closed.append((forward(payload, &output), payload)) }
        return output
    }

    /// The connection has ended: so has every slot.
    package mutating func terminated() -> Output {
        var output = Output()
        ended = true
        output.ended = slots.sorted { $0.value.order < $1.value.order }.map(\.key)
        slots = [:]
        return output
    }

    /// Queues `payload` on the connection and returns its number there.
    @discardableResult
    mutating func forward(_ payload: EventPayload, _ output: inout Output) -> Int {
        sent += 1
        output.writes.append(.send(payload))
        return sent
    }
}
