import TestSupport
import DiffStreamJSON
import FeedCore
import HTTPAPI
import HTTPCore
import Synchronization
import Testing

/// One feed's tagged fan-out for the slots of multi-feed streams, with fake slots: what each slot is
/// handed, object by object.
struct TaggedFanOutTests {
    /// A slot that records the payload objects it is handed.
    final class FakeSlot: EventSink {
        private struct State {
            var received: [EventPayload] = []
            var closed = false
            var onTermination: [@Sendable () -> Void] = []
            var onResync: (@Sendable (any EventSink) -> Void)?
        }

        let id: Int
        private let state = Mutex(State())
        private static let ids = Atomic<Int>(0)

        init() { id = Self.ids.add(1, ordering: .relaxed).newValue }

        var received: [EventPayload] { state.withLock { $0.received } }
        var closed: Bool { state.withLock { $0.closed } }
        /// Each event received: its type and id (`type id`).
        var events: [String] { received.flatMap { MemorySink.parse($0.bytes).map { "\($0.type) \($0.id ?? "-")" } } }

        func send(_ payload: EventPayload) { state.withLock { if !$0.closed { $0.received.append(payload) } } }
        func resume(with payload: EventPayload) { send(payload) }
        func close() {
            let actions = state.withLock { state -> [@Sendable () -> Void] in
                guard !state.closed else { return [] }
                state.closed = true
                defer { state.onTermination = [] }
                return state.onTermination
            }
            for action in actions { action() }
        }
        func onTermination(_ action: @escaping @Sendable () -> Void) {
            let now = state.withLock { state -> Bool in
                if !state.closed { state.onTermination.append(action) }
                return state.closed
            }
            if now { action() }
        }
        func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) { state.withLock { $0.onResync = action } }
        /// Its connection fell behind and has drained: it asks for a fresh snapshot.
        func drain() { state.withLock { $0.onResync }?(self) }
    }

    static func snapshot(_ items: [Int]) throws -> WireSnapshot {
        let list = items.map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",")
        return try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","model":null,"items":[\#(list)]}]}"#.utf8))
    }

    /// A feed named `name` at `version` (items 1…version, one write each).
    static func feed(_ name: String = "a", version: Int = 1) async throws -> Feed {
        let feed = Feed(name: name, replayLimit: 8, transport: MemoryBroadcaster(), metrics: FeedMetrics(), store: nil)
        for version in 0..<version { try await feed.publish(snapshot(Array(0...version))) }
        return feed
    }

    static func id(_ feed: Feed, _ version: Int) async -> String {
        "\(feed.name)@" + EventID(history: await feed.history, version: version).description
    }

    /// Every slot gets the very same tagged payload: tagged once per event (and the snapshot once per
    /// version), however many slots, and the feed counts each slot as a subscriber.
    @Test func everySlotGetsTheSamePayloadTaggedOnce() async throws {
        let feed = try await Self.feed()
        let feeds = TaggedFeeds()
        let slots = [FakeSlot(), FakeSlot(), FakeSlot()]
        for slot in slots { await feeds.join(slot, to: feed, lastEventID: nil) }
        #expect(feeds.count == 1)
        #expect(await feed.subscriberCount == 3)
        try await feed.publish(Self.snapshot([0, 1, 2]))
        let (v1, v2) = (await Self.id(feed, 1), await Self.id(feed, 2))
        for slot in slots {
            #expect(slot.events == ["snapshot \(v1)", "batch \(v2)"])
            #expect(slot.received[0] === slots[0].received[0], "the snapshot, tagged once")
            #expect(slot.received[1] === slots[0].received[1], "the batch, tagged once")
        }
        // A slot resyncing at the same version shares the snapshot tagged for that version.
        let late = FakeSlot()
        await feeds.join(late, to: feed, lastEventID: nil)
        slots[1].drain()
        #expect(await eventually { slots[1].received.count == 3 })
        #expect(slots[1].received[2] === late.received[0])
        #expect(slots[1].events.last == "snapshot \(v2)")
    }

    /// A slot joining gets its own first event (the batches it missed, none when current, else the
    /// snapshot), then the broadcasts it shares with the others.
    @Test func aJoiningSlotGetsWhatItMissedThenTheBroadcasts() async throws {
        let feed = try await Self.feed(version: 3)
        let feeds = TaggedFeeds()
        let first = FakeSlot(), behind = FakeSlot(), current = FakeSlot(), foreign = FakeSlot()
        await feeds.join(first, to: feed, lastEventID: nil)
        let history = await feed.history
        await feeds.join(behind, to: feed, lastEventID: EventID(history: history, version: 1).description)
        await feeds.join(current, to: feed, lastEventID: EventID(history: history, version: 3).description)
        await feeds.join(foreign, to: feed, lastEventID: "ds1.ffffffffffffffff.2")
        try await feed.publish(Self.snapshot([0, 1, 2, 3, 4]))
        let (v2, v3, v4) = (await Self.id(feed, 2), await Self.id(feed, 3), await Self.id(feed, 4))
        #expect(first.events == ["snapshot \(v3)", "batch \(v4)"])
        #expect(behind.events == ["batch \(v2)", "batch \(v3)", "batch \(v4)"])
        #expect(current.events == ["batch \(v4)"])
        #expect(foreign.events == ["snapshot \(v3)", "batch \(v4)"])
        #expect(foreign.received[0] === first.received[0])
    }

    /// Slots joining while the feed publishes: each one's first event and the batches after it follow
    /// on without a gap or a repeat.
    @Test func slotsJoiningDuringWritesSeeEveryVersionInOrder() async throws {
        let feed = try await Self.feed()
        let feeds = TaggedFeeds()
        let slots = (0..<12).map { _ in FakeSlot() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for version in 2...30 { try await feed.publish(Self.snapshot(Array(0..<version))) } }
            for slot in slots { group.addTask { await feeds.join(slot, to: feed, lastEventID: nil) } }
            try await group.waitForAll()
        }
        for slot in slots {
            let versions = slot.events.compactMap { $0.split(separator: ".").last.flatMap { Int($0) } }
            #expect(slot.events.first?.hasPrefix("snapshot") == true)
            #expect(versions == Array((versions.first ?? 0)...30), "\(slot.events)")
        }
        #expect(await feed.subscriberCount == 12)
    }

    /// The last slot to leave ends the fan-out, which leaves the feed; a slot that comes next gets a
    /// new one. An ended fan-out admits no slot.
    @Test func theLastSlotLeavingEndsTheFanOut() async throws {
        let feed = try await Self.feed()
        let feeds = TaggedFeeds()
        let one = FakeSlot(), two = FakeSlot()
        await feeds.join(one, to: feed, lastEventID: nil)
        await feeds.join(two, to: feed, lastEventID: nil)
        one.close()
        #expect(await eventually { await feed.subscriberCount == 1 })
        #expect(feeds.count == 1)
        two.close()
        #expect(await eventually { await feed.subscriberCount == 0 && feeds.count == 0 })
        #expect(await feed.isIdle)
        let three = FakeSlot()
        await feeds.join(three, to: feed, lastEventID: nil)
        let v1 = await Self.id(feed, 1)
        #expect(three.events == ["snapshot \(v1)"])
        #expect(await feed.subscriberCount == 1)

        let ended = TaggedFanOut(feed: feed)
        let last = FakeSlot()
        #expect(await ended.join(last, lastEventID: nil))
        last.close()
        #expect(ended.hasEnded)
        let tooLate = FakeSlot()
        let admitted = await ended.join(tooLate, lastEventID: nil)
        #expect(!admitted, "the caller joins a new fan-out")
        #expect(tooLate.received.isEmpty && !tooLate.closed)
    }

    /// A deleted feed ends every slot with `deleted`; a slot joining a feed that does not exist ends
    /// with it at once, and leaves no fan-out behind.
    @Test func deletedEndsEverySlot() async throws {
        let feed = try await Self.feed()
        let feeds = TaggedFeeds()
        let slots = [FakeSlot(), FakeSlot()]
        for slot in slots { await feeds.join(slot, to: feed, lastEventID: nil) }
        #expect(try await feed.delete())
        for slot in slots {
            #expect(slot.events.last == "deleted -")
            #expect(slot.closed)
        }
        #expect(await eventually { feeds.count == 0 })
        let late = FakeSlot()
        await feeds.join(late, to: feed, lastEventID: nil)
        #expect(late.events == ["deleted -"] && late.closed)
        #expect(feeds.count == 0)
        #expect(await feed.subscriberCount == 0)
    }
}
