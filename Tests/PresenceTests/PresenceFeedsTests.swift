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

    @Test func aConnectionIsPresentUntilItClosesAndTheFeedIsDroppedWhenIdle() async throws {
        let feeds = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings)
        let feed = try #require(await feeds.watch("board", identities: true))
        let connection = try #require(await feeds.open("board", identities: true, Self.alice()))
        #expect(await eventually { await Self.shown(feed).count == 1 })
        #expect(await Self.shown(feed).items.first?["name"] == "Alice")
        await feeds.close("board", connection: connection)
        #expect(await eventually { await Self.shown(feed).count == 0 })
        await feeds.unwatch("board")
        #expect(await eventually { await feeds.snapshot(of: "board") == nil }, "dropped once no one is present or watching")
    }

    @Test func instancesShowTheMergeOfTheirSharesAndADeadOnesLapse() async throws {
        let exchange = Exchange()
        let a = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings, sharing: exchange.instance("a"))
        let b = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings, sharing: exchange.instance("b"))
        let onB = try #require(await b.watch("board", identities: true))
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
    @Test func aProgramReadsWhoIsPresentAndTheJoinsAndLeaves() async throws {
        let feeds = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings)
        var snapshots = try #require(await feeds.snapshots(of: "board", identities: true)).makeAsyncIterator()
        let empty = await snapshots.next()
        #expect(empty?.count == 0, "reading makes no one present")
        let connection = try #require(await feeds.open("board", identities: true, Self.alice()))
        let joined = await snapshots.next()
        #expect(joined?.count == 1 && joined?.users.first?.name == "Alice" && joined?.users.first?.subject == "alice")
        #expect(joined.map { $0.changes(since: empty!).joined.map(\.name) } == ["Alice"])
        await feeds.close("board", connection: connection)
        let left = await snapshots.next()
        #expect(left?.count == 0 && left.map { $0.changes(since: joined!).left.map(\.name) } == ["Alice"])
    }
}

extension PresenceFeedsTests {
    /// `--max-presence-feeds` (issue 55, a family's members): past the cap a feed whose presence is not
    /// held gets none (no one is made present, no presence feed to watch, read or follow), the feeds held
    /// go on as before, and room comes back when one is dropped.
    @Test func pastTheCapAFeedNotHeldHasNoPresenceUntilOneIsDropped() async throws {
        let feeds = PresenceFeeds(transport: MemoryBroadcaster(), settings: Self.settings, maxFeeds: 2)
        #expect(feeds.maxFeeds == 2)
        let alice = try #require(await feeds.open("home.alice", identities: true, Self.alice()))
        let bobs = try #require(await feeds.watch("home.bob", identities: true))
        #expect(await feeds.hasRoom(for: "home.carol") == false)
        #expect(await feeds.open("home.carol", identities: true, Self.alice()) == nil, "a stream of a feed past the cap counts nowhere")
        #expect(await feeds.watch("home.carol", identities: true) == nil)
        #expect(await feeds.read("home.carol", identities: true) == nil)
        #expect(await feeds.snapshots(of: "home.carol", identities: true) == nil)
        #expect(await feeds.snapshot(of: "home.carol") == nil, "nothing was made for it")

        // The feeds held are served as before: another stream of one, a reader of the other.
        let second = try #require(await feeds.open("home.alice", identities: true, PresenceConnection(user: .identified(subject: "bob", name: "Bob"))))
        let alices = try #require(await feeds.read("home.alice", identities: true))
        #expect(await eventually { await Self.shown(alices).count == 2 })
        _ = try #require(await feeds.open("home.bob", identities: true, Self.alice()))
        #expect(await eventually { await Self.shown(bobs).count == 1 })

        // home.alice is dropped once no one is present (the grace is 0) and no one watches it: room again.
        await feeds.close("home.alice", connection: alice)
        await feeds.close("home.alice", connection: second)
        #expect(await eventually { await feeds.hasRoom(for: "home.carol") })
        let carols = try #require(await feeds.watch("home.carol", identities: true))
        _ = try #require(await feeds.open("home.carol", identities: true, Self.alice()))
        #expect(await eventually { await Self.shown(carols).count == 1 })
        #expect(await feeds.hasRoom(for: "home.alice") == false, "two held again: home.bob and home.carol")
    }
}
