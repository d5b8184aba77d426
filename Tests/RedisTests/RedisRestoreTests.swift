import DiffStreamJSON
@testable import FeedServer
import FeedReplication
import FeedStorage
import Redis
import Testing
import TestSupport
@testable import RedisFeedStore

/// Redis put back from an older copy (issue 51, item 2): a (history, version) pair names one state,
/// forever. The copy is made with `DUMP` and put back with `RESTORE … REPLACE`, as an older RDB or AOF
/// would put it back, while no instance holds the feed (every instance restarted since).
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisRestoreTests {
    typealias Instance = SharedFeedRegistryTests.Instance

    /// The feed's keys as `DUMP` gives them, to put back later.
    static func copy(_ feed: String, _ admin: RedisConnection) throws -> [(key: String, dump: [UInt8])] {
        let keys = RedisKeys()
        return try [keys.feed(feed), keys.batches(feed)].map { key in (key, try #require(try admin.command(["DUMP", key]).bytes)) }
    }

    static func putBack(_ copy: [(key: String, dump: [UInt8])], _ admin: RedisConnection) throws {
        for (key, dump) in copy {
            #expect(try admin.command([Array("RESTORE".utf8), Array(key.utf8), Array("0".utf8), dump, Array("REPLACE".utf8)]).string == "OK")
        }
    }

    /// Writes versions `range` of `feed` (one item more each).
    static func write(_ instance: Instance, _ feed: String, _ range: ClosedRange<Int>) async throws {
        for n in range { _ = try await instance.registry.write(feed, snapshot: SharedFeedRegistryTests.snapshot(Array(1...n))) }
    }

    /// A client's id beyond what Redis holds gets a snapshot, and the read changes nothing: ids are not
    /// signed, so a made-up one must not restart a history (the log names the command that does).
    @Test(arguments: [5, 99])
    func anIdBeyondWhatRedisHoldsGetsASnapshotAndChangesNothing(beyond: Int) async throws {
        try await RedisTestServer.with { server in
            let admin = try RedisConnection(url: server.url, timeout: 2)
            defer { admin.close() }
            let a = try await Instance(server)
            try await Self.write(a, "news", 1...3)
            let old = await (try #require(try await a.registry.read("news"))).history
            let backup = try Self.copy("news", admin)
            try await Self.write(a, "news", 4...5)
            await a.close()
            try Self.putBack(backup, admin)

            let b = try await Instance(server)
            let feed = try #require(try await b.registry.read("news"))
            let sink = MemorySink()
            await feed.subscribe(sink, lastEventID: "ds1.\(old).\(beyond)")
            let first = try #require(await sink.next())
            #expect(first.type == "snapshot" && first.id == "ds1.\(old).3")
            #expect(await feed.history == old)
            #expect(await feed.version == 3)
            await b.close()
        }
    }

    @Test func theRestoreCommandGivesEveryFeedANewHistory() async throws {
        try await RedisTestServer.with { server in
            let admin = try RedisConnection(url: server.url, timeout: 2)
            defer { admin.close() }
            let a = try await Instance(server)
            for feed in ["news", "home.alice"] { try await Self.write(a, feed, 1...3) }
            let old = await (try #require(try await a.registry.read("news"))).history
            let backup = try Self.copy("news", admin)
            try await Self.write(a, "news", 4...5)
            let sink = MemorySink()
            try await #require(try await a.registry.read("news")).subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.type == "snapshot")
            try Self.putBack(backup, admin)

            // Run while an instance holds the feed: it hears of the new history and resyncs its subscribers.
            #expect(try await RedisStore.startNewHistories(url: server.url, keys: RedisKeys()) == .init(feeds: 2))
            let resync = try #require(await sink.next())
            #expect(resync.type == "snapshot" && resync.id?.contains(old) == false)
            // Even an id from before the copy (which Redis still holds) gets a snapshot now.
            let b = try await Instance(server)
            let feed = try #require(try await b.registry.read("news"))
            #expect(await feed.history != old)
            #expect(await feed.version == 4)
            let early = MemorySink()
            await feed.subscribe(early, lastEventID: "ds1.\(old).2")
            #expect(await early.next()?.type == "snapshot")
            await a.close(); await b.close()
        }
    }
}
