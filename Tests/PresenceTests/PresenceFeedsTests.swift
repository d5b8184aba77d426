import DiffStreamJSON
import FeedCore
import Presence
import Synchronization
import Testing
import TestSupport

/// The presence feeds of an instance, alone and sharing with another through an exchange in memory
/// (what Redis is under `--redis`).
struct PresenceFeedsTests {
    /// The shares of every instance, and which instances are alive.
    final class Exchange: Sendable {
        let state = Mutex<(shares: [String: [String: [UInt8]]], live: Set<String>)>(([:], []))

        func instance(_ id: String) -> Instance {
            state.withLock { _ = $0.live.insert(id) }
            return Instance(exchange: self, id: id)
        }

        func kill(_ id: String) { state.withLock { _ = $0.live.remove(id) } }
    }

    struct Instance: PresenceSharing {
        let exchange: Exchange
        let id: String
        var secret: [UInt8] { Array("the deployment's presence secret".utf8) }

        func publish(feed: String, share: [UInt8]?) async {
            exchange.state.withLock { $0.shares[feed, default: [:]][id] = share }
        }

        func shares(of feed: String) async -> [[UInt8]] {
            exchange.state.withLock { state in
                (state.shares[feed] ?? [:]).filter { $0.key != id && state.live.contains($0.key) }.map(\.value)
            }
        }
    }

    static let settings = PresenceTracker.Settings(interval: 0.02, grace: 0)

    /// The count and items' models `feed` shows now.
    static func shown(_ feed: Feed) async -> (count: Double?, items: [JSONValue]) {
        let snapshot = await feed.snapshot
        let section = snapshot.sections.first
        return (section?.model["count"]?.numberValue, section.flatMap { snapshot.items(inSection: $0.id) }?.map(\.model.value) ?? [])
    }

    static func alice() -> PresenceConnection { PresenceConnection(user: .identified(subject: "alice", name: "Alice")) }

    @Test func aConnectionIsPresentUntilItClosesAndTheFeedIsDroppedWhenIdle() async {
        let feeds = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings)
        let feed = await feeds.watch("board", identities: true)
        let connection = await feeds.open("board", identities: true, Self.alice())
        #expect(await eventually { await Self.shown(feed).count == 1 })
        #expect(await Self.shown(feed).items.first?["name"] == "Alice")
        await feeds.close("board", connection: connection)
        #expect(await eventually { await Self.shown(feed).count == 0 })
        await feeds.unwatch("board")
        #expect(await eventually { await feeds.snapshot(of: "board") == nil }, "dropped once no one is present or watching")
    }

    @Test func instancesShowTheMergeOfTheirSharesAndADeadOnesLapse() async {
        let exchange = Exchange()
        let a = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings, sharing: exchange.instance("a"))
        let b = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings, sharing: exchange.instance("b"))
        let onB = await b.watch("board", identities: true)
        _ = await a.open("board", identities: true, Self.alice())
        #expect(await eventually { await Self.shown(onB).count == 1 }, "B shows the user whose stream is on A")
        _ = await b.open("board", identities: true, Self.alice())
        _ = await b.open("board", identities: true, PresenceConnection(user: .identified(subject: "bob", name: "Bob")))
        #expect(await eventually { await Self.shown(onB).count == 2 })
        func alice() async -> JSONValue? { await Self.shown(onB).items.first { $0["name"] == "Alice" } }
        #expect(await eventually { await alice()?["connections"]?.numberValue == 2 }, "one user on two instances is one item")
        exchange.kill("a")
        #expect(await eventually { await alice()?["connections"]?.numberValue == 1 }, "A's share lapses with A")
        #expect(await Self.shown(onB).count == 2)
    }
}

extension PresenceFeedsTests {
    @Test func aProgramReadsWhoIsPresentAndTheJoinsAndLeaves() async {
        let feeds = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings)
        var snapshots = await feeds.snapshots(of: "board", identities: true).makeAsyncIterator()
        let empty = await snapshots.next()
        #expect(empty?.count == 0, "reading makes no one present")
        let connection = await feeds.open("board", identities: true, Self.alice())
        let joined = await snapshots.next()
        #expect(joined?.count == 1 && joined?.users.first?.name == "Alice" && joined?.users.first?.subject == "alice")
        #expect(joined.map { $0.changes(since: empty!).joined.map(\.name) } == ["Alice"])
        await feeds.close("board", connection: connection)
        let left = await snapshots.next()
        #expect(left?.count == 0 && left.map { $0.changes(since: joined!).left.map(\.name) } == ["Alice"])
    }
}
