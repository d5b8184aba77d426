import FeedCore
import HTTPCore
import Synchronization

/// One feed's events for every multi-feed stream carrying it: subscribed to the ``Feed`` as one
/// ordinary subscriber (a ``SubscriberGroup``, counted as its members), it puts the feed's name in
/// each event's ids (`id: NAME@ds1.<history>.<version>`, ``FeedEvents/namingFeedInID(_:feed:)``) once
/// and forwards that one payload to every slot of the feed (``FeedSlot``), across all connections.
///
/// The feed calls ``send(_:)`` and ``end(with:)`` on its actor, in broadcast order (the transport
/// sends synchronously to a sink that is not one of its own streams); a slot joins on the actor too
/// (``Feed/join(_:lastEventID:admit:)``), so its first event comes in order with the broadcasts, and so
/// does the snapshot a slot that fell behind is resumed with (``Feed/resyncMember(_:)``). The snapshot,
/// tagged, is kept for its version: any number of slots joining or resyncing at one version cost one
/// tagging.
///
/// It ends when its last slot leaves (the feed forgets it) or when the feed ends it (`deleted`: every
/// slot ends); an ended fan-out admits no slot (``TaggedFeeds`` makes a new one).
package final class TaggedFanOut: SubscriberGroup {
    private struct State {
        var slots: [Int: any EventSink] = [:]
        /// The last snapshot event the feed handed over, and its tagged form.
        var snapshot: (source: EventPayload, tagged: EventPayload)?
        var ended = false
        var onTermination: [@Sendable () -> Void] = []
    }

    package let id: Int
    package let feed: Feed
    private let state = Mutex(State())

    package init(feed: Feed) {
        self.id = SubscriberGroupID.next()  // negative: never a transport's stream id
        self.feed = feed
    }

    package var memberCount: Int { state.withLock { $0.slots.count } }

    /// Whether it has ended (it admits no slot then).
    package var hasEnded: Bool { state.withLock { $0.ended } }

    /// Adds `slot`, which resumes from `lastEventID` (the part of its position after `NAME@`): it gets
    /// its first event, then the feed's broadcasts. False: this fan-out ended first (nothing was sent;
    /// join a new one).
    package func join(_ slot: any EventSink, lastEventID: String?) async -> Bool {
        let admitted = Mutex<Bool?>(nil)
        await feed.join(self, lastEventID: lastEventID) { opening, notice in
            let outcome = self.admit(slot, opening, notice)
            admitted.withLock { $0 = outcome }
            return outcome != false
        }
        switch admitted.withLock({ $0 }) {
        case true?:
            slot.onTermination { [self] in leave(slot.id) }
            slot.onResync { [self] _ in Task { await feed.resyncMember { resume(slot.id, with: $0) } } }
            return true
        case false?:
            return false
        case nil:
            return true  // `deleted`: the slot ended
        }
    }

    /// On the feed's actor: takes `slot` with its first events, or refuses it (ended). A slot of a feed
    /// that does not exist ends with `deleted` (nil: neither admitted nor refused); a fan-out left with no
    /// slot ends.
    private func admit(_ slot: any EventSink, _ opening: FeedOpening, _ notice: EventPayload?) -> Bool? {
        if case .deleted(let payload) = opening {
            let ends = state.withLock { state -> Bool? in
                guard !state.ended else { return nil }
                if state.slots.isEmpty { state.ended = true }
                return state.slots.isEmpty
            }
            guard let ends else { return false }
            slot.end(with: tagged(payload))
            if ends { runTermination() }
            return nil
        }
        return state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.slots[slot.id] = slot
            if case .snapshot(let payload) = opening {
                slot.send(taggedSnapshot(payload, &state))
            } else if let payload = opening.payload {
                slot.send(tagged(payload))
            }
            if let notice { slot.send(tagged(notice)) }
            return true
        }
    }

    /// A slot left (its stream ended, or its feed's part did): the last one ends the fan-out.
    private func leave(_ id: Int) {
        let last = state.withLock { state -> Bool? in
            guard !state.ended, state.slots.removeValue(forKey: id) != nil else { return nil }
            if state.slots.isEmpty { state.ended = true }
            return state.slots.isEmpty
        }
        switch last {
        case true?: runTermination()
        case false?: Task { [self] in await feed.recount(self) }
        case nil: break
        }
    }

    /// On the feed's actor: resumes slot `id`, which fell behind, with the feed's current snapshot.
    private func resume(_ id: Int, with snapshot: EventPayload) {
        state.withLock { state in
            guard let slot = state.slots[id] else { return }
            slot.resume(with: taggedSnapshot(snapshot, &state))
        }
    }

    private func runTermination() {
        let actions = state.withLock { state in
            defer { state.onTermination = [] }
            return state.onTermination
        }
        for action in actions { action() }
    }

    /// `payload` with the feed's name in its ids.
    private func tagged(_ payload: EventPayload) -> EventPayload {
        EventPayload(FeedEvents.namingFeedInID(payload.bytes, feed: feed.name))
    }

    /// The snapshot event `payload`, tagged once for its version (the feed hands over one payload per version).
    private func taggedSnapshot(_ payload: EventPayload, _ state: inout State) -> EventPayload {
        if let cached = state.snapshot, cached.source === payload { return cached.tagged }
        let tagged = tagged(payload)
        state.snapshot = (payload, tagged)
        return tagged
    }

    // MARK: EventSink, as the feed sees it

    /// An event of the feed for every slot, tagged once (a snapshot: once per version).
    package func send(_ payload: EventPayload) {
        state.withLock { state in
            guard !state.ended, !state.slots.isEmpty else { return }
            let tagged = state.snapshot?.source === payload ? state.snapshot!.tagged : tagged(payload)
            for slot in state.slots.values { slot.send(tagged) }
        }
    }

    /// It never falls behind: the same as ``send(_:)``.
    package func resume(with payload: EventPayload) { send(payload) }

    /// Ends every slot with `final` (`deleted`), tagged once.
    package func end(with final: EventPayload) {
        let slots = state.withLock { state -> [any EventSink] in
            guard !state.ended else { return [] }
            state.ended = true
            defer { state.slots = [:] }
            return Array(state.slots.values)
        }
        let payload = tagged(final)
        for slot in slots { slot.end(with: payload) }
        runTermination()
    }

    /// Ends every slot's part.
    package func close() {
        let slots = state.withLock { state -> [any EventSink] in
            guard !state.ended else { return [] }
            state.ended = true
            defer { state.slots = [:] }
            return Array(state.slots.values)
        }
        for slot in slots { slot.close() }
        runTermination()
    }

    package func end(withLast last: @escaping @Sendable () -> EventPayload?) {
        if let payload = last() { end(with: payload) } else { close() }
    }

    package func onTermination(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.ended else { return true }
            state.onTermination.append(action)
            return false
        }
        if runNow { action() }
    }

    /// It never falls behind: never called.
    package func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) {}
}
