import Foundation
import DiffStream
import DiffStreamJSON
@testable import FeedServer
import FeedReplication
import FeedStorage
import Logging
import Redis
import Synchronization
import Testing
import TestSupport
@testable import RedisFeedStore

/// `FeedRegistry` and its feeds as caches of Redis (issue 26): two registries on one `redis-server`
/// stand for two instances, with subscribers in memory (`MemorySink`).
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct SharedFeedRegistryTests {
    /// One instance: its store, and a registry on it following the store's events.
    struct Instance {
        let store: RedisStore
        let registry: FeedRegistry
        let follower: SharedFeedFollower

        /// - Parameter hearing: false for an instance whose registry never follows the store's events
        ///   (``Instance/deaf(_:)``).
        init(_ server: RedisTestServer, replay: Int = 8, maxFeeds: Int? = nil, prefix: String = "diffstream", hearing: Bool = true) async throws {
            store = try RedisStore.open(url: server.url, keys: RedisKeys(prefix: prefix), replay: replay, maxFeeds: maxFeeds, pingInterval: 0.2)
            registry = FeedRegistry(replayLimit: replay, transport: MemoryBroadcaster(), sharing: store, logger: Logger(label: "test"))
            follower = SharedFeedFollower(registry: registry)
            if hearing { await follower.start(checkInterval: 3600) }  // position checks are called by the tests
        }

        /// An instance that hears no other instance's commits: its registry never follows the store's
        /// events, so every copy it holds goes stale as soon as another instance writes, and stays so
        /// until a write, a read's position check or a resume reads Redis again. Deterministic, where
        /// unsubscribing a following instance from a feed's channel is not: the refresh that Redis's
        /// confirmation of the earlier `SUBSCRIBE` queues can run at any time after it, even after the
        /// other instance's writes, and make the copy current.
        static func deaf(_ server: RedisTestServer) async throws -> Instance {
            try await Instance(server, hearing: false)
        }

        func close() async {
            await follower.stop()
            store.close()
        }
    }

    static func snapshot(_ items: [Int]) throws -> WireSnapshot {
        let list = items.map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",")
        return try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"a","model":null,"items":[\#(list)]}]}"#.utf8))
    }

    /// Events until one of `version` (or the end), checking that batch versions are contiguous.
    static func events(_ sink: MemorySink, upTo version: Int) async -> [MemorySink.Event] {
        var events: [MemorySink.Event] = []
        while let event = await sink.next() {
            events.append(event)
            if case .number(let seen)? = event.json?["version"], Int(seen) == version { break }
        }
        return events
    }

    /// How many connections Redis counts as following `name`'s channel (`PUBSUB NUMSUB`).
    static func followers(_ name: String, admin: RedisConnection) throws -> Int? {
        if case .integer(let count)? = try admin.command(["PUBSUB", "NUMSUB", RedisKeys(prefix: "diffstream").channel(name)]).array?.last { Int(count) } else { nil }
    }

    /// Waits for Redis to count `count` followers of `name` (a subscriber's thread sends what changed
    /// when woken); false if it does not within 10 s.
    static func until(_ name: String, has count: Int, admin: RedisConnection) async throws -> Bool {
        try await eventually { try followers(name, admin: admin) == count }
    }

    /// Waits for the copy of `name` that `instance` holds to be settled: the refresh that follows a
    /// load (the registry queues it to catch commits published during the load) has read Redis, and
    /// nothing else is under way (``Feed/isBusy``). A ``Instance/deaf(_:)`` instance then reads Redis
    /// again only when a test asks it to, so whatever is written elsewhere from then on leaves its
    /// copy stale, deterministically.
    static func settle(_ name: String, on instance: Instance) async throws {
        let feed = try #require(try await instance.registry.read(name))
        #expect(await eventually { await !feed.isBusy }, "the copy of \(name) settles")
    }

    /// `name` at version 2 in Redis (written through `written`), and `held`'s copy of it at 1: stale
    /// (`held` is ``Instance/deaf(_:)``).
    static func staleCopy(_ name: String, written a: Instance, held b: Instance) async throws -> Feed {
        _ = try await a.registry.write(name, snapshot: snapshot([1]))
        let held = try #require(try await b.registry.read(name))
        try await settle(name, on: b)
        _ = try await a.registry.write(name, snapshot: snapshot([1, 2]))
        #expect(await held.version == 1, "B's copy is stale")
        return held
    }

    static func versions(_ events: [MemorySink.Event]) -> [Int] {
        events.compactMap { if case .number(let version)? = $0.json?["version"] { Int(version) } else { nil } }
    }

    @Test func writesOnEitherInstanceReachSubscribersOfBothInOrder() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            let onB = MemorySink(), onA = MemorySink()
            try await #require(await b.registry.read("news")).subscribe(onB, lastEventID: nil)
            try await #require(await a.registry.read("news")).subscribe(onA, lastEventID: nil)
            for n in 2...12 {
                let writer = n % 3 == 0 ? a : b
                #expect(try await writer.registry.write("news", snapshot: Self.snapshot(Array(1...n))).version == n)
            }
            for sink in [onA, onB] {
                let events = await Self.events(sink, upTo: 12)
                #expect(events.first?.type == "snapshot")
                #expect(Self.versions(events) == Array(1...12))
            }
            let onAJSON = try await a.registry.read("news")?.document().json, onBJSON = try await b.registry.read("news")?.document().json
            #expect(onAJSON != nil && onAJSON == onBJSON)
            await a.close(); await b.close()
        }
    }

    @Test func racingWritersThroughTwoInstancesGiveContiguousVersions() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("race", snapshot: Self.snapshot([0]))
            let sink = MemorySink()
            try await #require(await b.registry.read("race")).subscribe(sink, lastEventID: nil)
            let acknowledged = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 1...30 {
                    group.addTask { try await (n % 2 == 0 ? a : b).registry.write("race", snapshot: Self.snapshot([0, n])).version }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Every write was acknowledged once, at its own version, and subscribers saw every version.
            #expect(acknowledged.sorted() == Array(2...31))
            #expect(Self.versions(await Self.events(sink, upTo: 31)) == Array(1...31))
            await a.close(); await b.close()
        }
    }

    @Test func anEventIDFromOneInstanceResumesOnAnotherWithOnlyTheMissedBatches() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            let first = MemorySink()
            try await #require(await a.registry.read("news")).subscribe(first, lastEventID: nil)
            let snapshot = try #require(await first.next())
            let lastID = try #require(snapshot.id)
            for n in 2...4 { _ = try await a.registry.write("news", snapshot: Self.snapshot(Array(1...n))) }
            let resumed = MemorySink()
            try await #require(await b.registry.read("news")).subscribe(resumed, lastEventID: lastID)
            let events = await Self.events(resumed, upTo: 4)
            #expect(events.map(\.type) == ["batch", "batch", "batch"])
            #expect(Self.versions(events) == [2, 3, 4])
            await a.close(); await b.close()
        }
    }

    @Test func aFlushedRedisEndsEveryStreamAndTheFeedStartsANewHistory() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1, 2]))
            let feed = try #require(try await a.registry.read("news"))
            let old = await feed.history
            let sink = MemorySink()
            await feed.subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.type == "snapshot")
            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try admin.command(["FLUSHALL"])
            await a.registry.sharedFeeds?.checkPositions()
            #expect(await sink.next()?.type == "deleted")
            #expect(await sink.next() == nil)
            #expect(try await a.registry.read("news") == nil)
            // Written again: version 1 of a new history, never a batch continuing the old one.
            let created = try await a.registry.write("news", snapshot: Self.snapshot([3]))
            #expect(created.created && created.version == 1)
            #expect(try await a.registry.read("news")?.history != old)
            await a.close()
        }
    }

    @Test func aCommitWhoseMessageWasMissedIsFilledByThePositionCheck() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            let sink = MemorySink()
            try await #require(await b.registry.read("news")).subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.type == "snapshot")
            // Committed behind the instances' back (as if its message were lost): only B's position check finds it.
            let writer = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 8)
            b.store.unfollow("news")
            let stored = try #require(try await writer.read("news"))
            let event = Array("event: batch\nid: ds1.\(stored.history).2\ndata: {\"feed\":\"news\",\"version\":2}\n\n".utf8)
            let put = FeedWrite.put(name: "news", history: stored.history, version: 2, snapshot: WireCodec.encode(try Self.snapshot([1, 2])),
                                    batch: StoredBatch(version: 2, bytes: event), keepFrom: 0, viewState: nil)
            #expect(await writer.commit(FeedCommit(put, base: 1, writeID: "w", clientKey: true, answer: [])) == .committed(version: 2, answer: [], first: true))
            await b.registry.sharedFeeds?.checkPositions()
            let filled = try #require(await sink.next())
            #expect(filled.type == "batch" && filled.id == "ds1.\(stored.history).2")
            writer.close()
            await a.close(); await b.close()
        }
    }

    @Test func theMostFeedsAreCountedOverEveryInstance() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server, maxFeeds: 2), b = try await Instance(server, maxFeeds: 2)
            _ = try await a.registry.write("one", snapshot: Self.snapshot([1]))
            _ = try await b.registry.write("two", snapshot: Self.snapshot([1]))
            await #expect(throws: FeedWriteError.limit(StorageLimitExceeded(limit: .maxFeeds, value: 2, needed: 3))) {
                try await a.registry.write("three", snapshot: Self.snapshot([1]))
            }
            // A delete on one instance makes room on the other.
            #expect(try await a.registry.delete("two"))
            #expect(try await b.registry.write("three", snapshot: Self.snapshot([1])).created)
            await a.close(); await b.close()
        }
    }

    /// While an instance runs, another with other settings is refused, naming them; once none runs
    /// (each left, or its liveness ran out), the next start's settings are taken.
    @Test func settingsMustEqualTheRunningInstancesAndAreTakenWhenNoneRuns() async throws {
        try await RedisTestServer.with { server in
            let keys = RedisKeys(prefix: "settings")
            let admin = try RedisConnection(url: server.url, timeout: 2)
            func present() throws -> [String] { try admin.command(["ZRANGE", keys.instances, "0", "-1"]).array?.compactMap(\.string) ?? [] }
            #expect(try RedisStore.agree(on: [("replay", "1024"), ("max-feeds", "10")], url: server.url, keys: keys, instance: "a").isEmpty)
            #expect(try RedisStore.agree(on: [("replay", "1024"), ("max-feeds", "10")], url: server.url, keys: keys, instance: "b").isEmpty)
            let other = try RedisStore.agree(on: [("replay", "512"), ("max-feeds", "10")], url: server.url, keys: keys, instance: "c")
            #expect(other == ["replay: this instance has 512, the instances sharing 'settings:v1:' have 1024"])
            #expect(try present() == ["a", "b"], "a refused instance does not join")

            // A store leaves when closed; an instance that died is gone once its liveness runs out (0 ms here).
            let store = try RedisStore.open(url: server.url, keys: keys, instanceID: "a", replay: 1024)
            store.close()
            _ = try admin.command(["ZADD", keys.instances, "0", "b"])
            #expect(try RedisStore.agree(on: [("replay", "512"), ("max-feeds", "10")], url: server.url, keys: keys, instance: "c").isEmpty)
            #expect(try present() == ["c"])
            #expect(try admin.command(["HGET", keys.settings, "replay"]) == .bulk(Array("512".utf8)))
            // Agreeing again (a start retried) does not count the instance as another.
            #expect(try RedisStore.agree(on: [("replay", "256"), ("max-feeds", "10")], url: server.url, keys: keys, instance: "c").isEmpty)
        }
    }

    /// An open store keeps its instance present: its liveness is renewed before it ends.
    @Test func anOpenStoreStaysPresent() async throws {
        try await RedisTestServer.with { server in
            let keys = RedisKeys(prefix: "liveness")
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try RedisStore.agree(on: [("replay", "8")], url: server.url, keys: keys, instance: "a", livenessMilliseconds: 0).isEmpty)
            let store = try RedisStore.open(url: server.url, keys: keys, instanceID: "a", replay: 8)
            defer { store.close() }
            let renewed = await eventually {
                let now = (try? admin.command(["TIME"]).array?.first?.string).flatMap { Double($0) } ?? .infinity
                let until = (try? admin.command(["ZSCORE", keys.instances, "a"]).string).flatMap { Double($0) } ?? 0
                return until / 1000 > now + 1
            }
            #expect(renewed, "the store renews its liveness")
            #expect(!(try RedisStore.agree(on: [("replay", "9")], url: server.url, keys: keys, instance: "b").isEmpty))
        }
    }

    /// Every liveness lapsed (Redis was away) and an instance with other settings started meanwhile:
    /// the next renewal of a running store finds the difference and reports it.
    @Test func aRenewalReportsSettingsThatDifferSinceALapse() async throws {
        try await RedisTestServer.with { server in
            let keys = RedisKeys(prefix: "lapse")
            let admin = try RedisConnection(url: server.url, timeout: 2)
            let reports = Mutex<[[String]]>([])
            #expect(try RedisStore.agree(on: [("replay", "8")], url: server.url, keys: keys, instance: "a").isEmpty)
            let store = try RedisStore.open(url: server.url, keys: keys, instanceID: "a", settings: [("replay", "8")],
                                            onSettingsConflict: { differing in reports.withLock { $0.append(differing) } }, replay: 8)
            defer { store.close() }
            // At once, as a lapse leaves it: A's liveness gone, and B, started meanwhile, present with its settings.
            let lapse = [["MULTI"], ["ZREM", keys.instances, "a"], ["HSET", keys.settings, "replay", "9"],
                         ["ZADD", keys.instances, "99999999999999", "b"], ["EXEC"]]
            for command in lapse { _ = try admin.command(command) }
            // The next renewal (the store runs one every second; this one is called here, so the test
            // does not wait on a loaded machine's cooperative pool, which once held it past 30 s).
            await store.livenessRenewal.renew()
            #expect(reports.withLock { !$0.isEmpty }, "the next renewal finds the difference")
            #expect(reports.withLock { $0.first } == ["replay: this instance has 8, the instances sharing 'lapse:v1:' have 9"])
        }
    }

    /// Redis went back to version 2 (an older backup) and another instance wrote on from there before
    /// A's position check: its version 3 is not A's. A notices the content differs from what it served
    /// and gives the feed a new history, so its subscribers get a snapshot, never a batch continuing
    /// the rewritten history.
    @Test func versionsNumberedAgainWithOtherContentStartANewHistory() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            for n in 1...3 { _ = try await a.registry.write("news", snapshot: Self.snapshot(Array(1...n))) }
            let feed = try #require(try await a.registry.read("news"))
            let old = await feed.history
            let sink = MemorySink()
            await feed.subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.id == "ds1.\(old).3")
            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try admin.command(["HSET", RedisKeys().feed("news"), "version", "2", "snapshot", String(decoding: WireCodec.encode(try Self.snapshot([1, 2])), as: UTF8.self)])
            // The window as the backup had it: up to version 2 (a stream's ids only grow, so it is made again).
            let window = RedisKeys().batches("news")
            let second = try #require(try admin.command(["XRANGE", window, "2-0", "2-0"]).array?.first?.array?.last?.array?.last?.bytes)
            _ = try admin.command(["DEL", window])
            _ = try admin.command([Array("XADD".utf8), Array(window.utf8), Array("2-0".utf8), Array("e".utf8), second])
            let b = try await Instance(server)
            _ = try await b.registry.write("news", snapshot: Self.snapshot([7]))
            _ = try await b.registry.write("news", snapshot: Self.snapshot([7, 8]))
            let next = try #require(await sink.next())
            #expect(next.type == "snapshot", "\(next) \(sink.text)")
            #expect(next.id?.hasPrefix("ds1.\(old).") == false, "\(next)")
            await a.close(); await b.close()
        }
    }

    @Test func aRedisBehindWhatWasServedGivesTheFeedANewHistory() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            for n in 1...3 { _ = try await a.registry.write("news", snapshot: Self.snapshot(Array(1...n))) }
            let feed = try #require(try await a.registry.read("news"))
            let old = await feed.history
            let sink = MemorySink()
            await feed.subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.id == "ds1.\(old).3")
            // An older backup: Redis holds version 2 again (same history), which A served before 3.
            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try admin.command(["HSET", RedisKeys().feed("news"), "version", "2", "snapshot", String(decoding: WireCodec.encode(try Self.snapshot([1, 2])), as: UTF8.self)])
            await a.registry.sharedFeeds?.checkPositions()
            let resync = try #require(await sink.next())
            #expect(resync.type == "snapshot")
            let fresh = await feed.history
            #expect(fresh != old && resync.id == "ds1.\(fresh).3")
            // Writes go on in the new history; the old one's version 3 is never continued.
            #expect(try await a.registry.write("news", snapshot: Self.snapshot([9])).version == 4)
            #expect(await sink.next()?.id == "ds1.\(fresh).4")
            await a.close()
        }
    }

    @Test func withNoReplayWindowBatchesStillReachOtherInstances() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server, replay: 0), b = try await Instance(server, replay: 0)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            let onB = MemorySink()
            try await #require(await b.registry.read("news")).subscribe(onB, lastEventID: nil)
            for n in 2...4 { _ = try await a.registry.write("news", snapshot: Self.snapshot(Array(1...n))) }
            #expect(Self.versions(await Self.events(onB, upTo: 4)) == [1, 2, 3, 4])
            await a.close(); await b.close()
        }
    }

    @Test func aRetriedDeleteLeavesAFeedCreatedSinceAlone() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            #expect(try await a.registry.delete("news", writeID: "delete-once"))
            _ = try await b.registry.write("news", snapshot: Self.snapshot([2]))
            let sink = MemorySink()
            try await #require(await a.registry.read("news")).subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.type == "snapshot")
            // The client's retry gets the first answer, and ends nothing.
            #expect(try await a.registry.delete("news", writeID: "delete-once"))
            _ = try await b.registry.write("news", snapshot: Self.snapshot([2, 3]))
            #expect(await sink.next()?.type == "batch")
            await a.close(); await b.close()
        }
    }

    @Test func aKeyedWriteThatChangedNothingIsAnsweredTheSameAfterTheFeedChanged() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            let first = try await a.registry.write("news", snapshot: Self.snapshot([1]), options: FeedWriteOptions(writeID: "k"))
            #expect(first == FeedWriteResult(created: false, version: 1, operations: 0))
            _ = try await b.registry.write("news", snapshot: Self.snapshot([2]))
            let retry = try await b.registry.write("news", snapshot: Self.snapshot([1]), options: FeedWriteOptions(writeID: "k"))
            #expect(retry == FeedWriteResult(created: false, version: 1, operations: 0, replayed: true))
            #expect(try await b.registry.read("news")?.version == 2)  // the retry wrote nothing
            await a.close(); await b.close()
        }
    }

    /// A client's key is kept with a digest of its request: the same key sent with another snapshot,
    /// or by a delete, is refused on any instance and writes nothing; the first request's retry still
    /// gets its answer. A record kept before digests were (three fields) answers any request.
    @Test func aKeySentWithAnotherRequestIsRefused() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            let first = try await a.registry.write("news", snapshot: Self.snapshot([1]), options: FeedWriteOptions(writeID: "k"))
            await #expect(throws: FeedWriteError.idempotencyKeyReused) {
                try await b.registry.write("news", snapshot: Self.snapshot([1, 2]), options: FeedWriteOptions(writeID: "k"))
            }
            await #expect(throws: FeedWriteError.idempotencyKeyReused) { try await b.registry.delete("news", writeID: "k") }
            #expect(try await a.store.read("news")?.version == 1)
            var replayed = first
            replayed.replayed = true
            #expect(try await b.registry.write("news", snapshot: Self.snapshot([1]), options: FeedWriteOptions(writeID: "k")) == replayed)

            #expect(try await a.registry.delete("news", writeID: "d"))
            await #expect(throws: FeedWriteError.idempotencyKeyReused) {
                try await b.registry.write("news", snapshot: Self.snapshot([1]), options: FeedWriteOptions(writeID: "d"))
            }
            #expect(try await a.store.read("news") == nil)

            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try admin.command(["SET", a.store.keys.write("news", id: "old"), "done 1 1 1 2"])
            #expect(try await b.registry.write("news", snapshot: Self.snapshot([3]), options: FeedWriteOptions(writeID: "old"))
                    == FeedWriteResult(created: true, version: 1, operations: 2, replayed: true))
            await a.close(); await b.close()
        }
    }

    /// A write that changes nothing in an instance's copy is answered only once Redis holds the feed at
    /// that copy's version: a copy behind (a delete or a commit elsewhere not heard yet) is read again
    /// and the write computed against Redis's feed.
    @Test func aWriteThatChangesNothingInAStaleCopyIsComputedAgainstRedis() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance.deaf(server)
            for name in ["deleted", "moved"] {
                _ = try await a.registry.write(name, snapshot: Self.snapshot([1]))
                #expect(try await b.registry.read(name)?.version == 1)
                try await Self.settle(name, on: b)
            }
            #expect(try await a.registry.delete("deleted", writeID: nil))
            _ = try await a.registry.write("moved", snapshot: Self.snapshot([1, 2]))
            _ = try await a.registry.write("moved", snapshot: Self.snapshot([1]))
            #expect(await b.registry.sharedFeeds?.held("moved")?.version == 1, "B's copy is stale")

            let created = try await b.registry.write("deleted", snapshot: Self.snapshot([1]), options: FeedWriteOptions())
            #expect(created == FeedWriteResult(created: true, version: 1, operations: 2), "created again, not 'unchanged at 1'")
            let unchanged = try await b.registry.write("moved", snapshot: Self.snapshot([1]), options: FeedWriteOptions(writeID: "k"))
            #expect(unchanged == FeedWriteResult(created: false, version: 3, operations: 0), "unchanged at Redis's version")
            let stored = try #require(try await a.store.read("deleted"))
            #expect(stored.version == 1)
            await a.close(); await b.close()
        }
    }

    /// A write that loses its race must read the feed again; when Redis answers the commit but not
    /// that read (here an ACL takes `XRANGE` away), the write fails with the store's error at once,
    /// not a conflict after every attempt, and goes through once Redis can be read again.
    @Test func aWriteWhoseRereadFailsAnswersTheStoresError() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance.deaf(server)
            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try await Self.staleCopy("moved", written: a, held: b)
            _ = try admin.command(["ACL", "SETUSER", "default", "-xrange"])
            let next = try Self.snapshot([1, 2, 3])
            var refused: FeedWriteError?
            do throws(FeedWriteError) {
                _ = try await b.registry.write("moved", snapshot: next, options: FeedWriteOptions())
            } catch {
                refused = error
            }
            guard case .store? = refused else {
                Issue.record("expected the store's error, got \(String(describing: refused))")
                return
            }
            _ = try admin.command(["ACL", "SETUSER", "default", "+xrange"])
            let written = try await b.registry.write("moved", snapshot: next, options: FeedWriteOptions())
            #expect(written.version == 3)
            await a.close(); await b.close()
        }
    }

    /// A copy known to be behind that Redis answers the position of but not the read of (an ACL takes
    /// `XRANGE` away) is no answer: a read gets the store's error (503), not the old version; and a
    /// client resuming from a later version is not told `unavailable` (no outage is known, so no
    /// `available` would follow): the copy is read again instead.
    @Test func aStaleCopyThatCannotBeReadAgainIsNotServed() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance.deaf(server)
            let admin = try RedisConnection(url: server.url, timeout: 2)
            let held = try await Self.staleCopy("moved", written: a, held: b)
            let history = await held.history

            _ = try admin.command(["ACL", "SETUSER", "default", "-xrange"])
            await #expect(throws: StoreError.self) { try await b.registry.read("moved") }
            let sink = MemorySink()
            await held.subscribe(sink, lastEventID: "ds1.\(history).2")
            #expect(!sink.text.contains("event: unavailable"), "\(sink.text)")
            _ = try admin.command(["ACL", "SETUSER", "default", "+xrange"])
            #expect(try await b.registry.read("moved")?.version == 2)
            await a.close(); await b.close()
        }
    }

    /// A read (`GET /feeds/{feed}`, ``FeedRegistry/latest(_:)``) on one instance answers every write
    /// acknowledged on another before it, even when that write's message has not arrived yet.
    @Test func aReadAnswersWritesAcknowledgedOnAnotherInstance() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance.deaf(server)
            for name in ["deleted", "moved"] {
                _ = try await a.registry.write(name, snapshot: Self.snapshot([1]))
                #expect(try await b.registry.read(name)?.version == 1)
                try await Self.settle(name, on: b)
            }
            #expect(try await a.registry.delete("deleted", writeID: nil))
            _ = try await a.registry.write("moved", snapshot: Self.snapshot([1, 2]))
            #expect(await b.registry.sharedFeeds?.held("moved")?.version == 1, "B's copy is stale")
            // Several at once (`GET /events`): one position check.
            let several = await b.registry.read(["moved", "deleted", "never"])
            var versions: [Int?] = []
            for found in several { versions.append(await (try found.get())?.version) }
            #expect(versions == [2, nil, nil])
            #expect(try await b.registry.read("moved")?.version == 2)
            #expect(try await b.registry.read("deleted") == nil)
            _ = try await a.registry.write("deleted", snapshot: Self.snapshot([3]))
            #expect(try await b.registry.read("deleted")?.version == 1, "created again")
            await a.close(); await b.close()
        }
    }

    /// A list of names, one item each: `add` and `remove` by name; removing a name not there is refused.
    /// `note` changes a part of the state that is not shown (a change with no batch).
    struct Shelf: HostedViewModel {
        struct State: Codable, Sendable, Equatable { var names: [String] = []; var note = "" }
        struct Shelf: Identifiable, Equatable, WireSectionConvertible {
            var id = "shelf"
            var wireSection: WireSection { WireSection(id: id, model: nil) }
        }
        struct Name: Identifiable, Equatable, WireItemConvertible {
            var id: String
            var wireItem: WireItem { WireItem(id: id, kind: "name", model: nil) }
        }
        struct Input: Decodable, Sendable { var name: String }

        var initialState: State { State() }

        func render(_ state: State) throws -> Snapshot<Shelf, Name> {
            try Snapshot { Section(Shelf()) { state.names.map(Name.init) } }
        }

        var actions: [HostedAction<State>] {
            [
                HostedAction("add", input: Input.self, fields: [ActionField("name", .string)], isPublic: true) { state, input in
                    state.names.append(input.name)
                },
                HostedAction("note", input: Input.self, fields: [ActionField("name", .string)], isPublic: true) { state, input in
                    state.note = input.name
                },
                HostedAction("remove", input: Input.self, fields: [ActionField("name", .string)], isPublic: true) { state, input in
                    guard let index = state.names.firstIndex(of: input.name) else { throw InvalidInput(field: "name", "no '\(input.name)' on the shelf") }
                    state.names.remove(at: index)
                },
            ]
        }
    }

    /// A hosted view model's action runs on the state Redis holds: one refused on an instance's stale
    /// copy (another instance's change not heard yet) runs again on Redis's state. A retry with a
    /// client's key gets the first answer even where the action no longer applies.
    @Test func actionsRunOnTheStateRedisHoldsAndARetryGetsItsFirstAnswer() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance.deaf(server)
            let onA = try await HostedFeeds(registry: a.registry).host(Shelf(), as: "shelf")
            let onB = try await HostedFeeds(registry: b.registry).host(Shelf(), as: "shelf")
            try await Self.settle("shelf", on: b)
            let added = try await onA.perform("add", body: Array(#"{"name":"x"}"#.utf8), writeID: nil)
            #expect(await b.registry.sharedFeeds?.held("shelf")?.version == added.version - 1, "B has not heard of x")

            let removed = try await onB.perform("remove", body: Array(#"{"name":"x"}"#.utf8), writeID: "k")
            #expect(removed == FeedWriteResult(created: false, version: added.version + 1, operations: 1))
            let retried = try await onA.perform("remove", body: Array(#"{"name":"x"}"#.utf8), writeID: "k")
            #expect(retried == FeedWriteResult(created: false, version: added.version + 1, operations: 1, replayed: true))
            for (action, body) in [("add", #"{"name":"x"}"#), ("remove", #"{"name":"z"}"#)] {
                await #expect(throws: ViewModelError.notPublished(.idempotencyKeyReused), "\(action) \(body) with another action's key") {
                    try await onA.perform(action, body: Array(body.utf8), writeID: "k")
                }
            }
            await #expect(throws: ViewModelError.invalidField(field: "name", reason: "no 'y' on the shelf")) {
                try await onB.perform("remove", body: Array(#"{"name":"y"}"#.utf8), writeID: nil)
            }
            await a.close(); await b.close()
        }
    }

    /// An action that changes nothing in an instance's stale copy of the state, where Redis holds another
    /// state at the same version (a change of the state alone elsewhere), is run again on Redis's state
    /// rather than answered "nothing changed".
    @Test func anActionThatChangesNothingInAStaleStateRunsOnRedissState() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance.deaf(server)
            let onA = try await HostedFeeds(registry: a.registry).host(Shelf(), as: "shelf")
            let onB = try await HostedFeeds(registry: b.registry).host(Shelf(), as: "shelf")
            try await Self.settle("shelf", on: b)
            let noted = try await onA.perform("note", body: Array(#"{"name":"x"}"#.utf8), writeID: nil)
            #expect(noted.operations == 0, "the note is not shown: the state alone changed")
            let cleared = try await onB.perform("note", body: Array(#"{"name":""}"#.utf8), writeID: nil)
            #expect(cleared.version == noted.version)
            let stored = try #require(try await a.store.read("shelf")?.viewState)
            #expect(try JSONDecoder().decode(Shelf.State.self, from: Data(stored)).note == "", "B's clearing took effect in Redis")
            await a.close(); await b.close()
        }
    }

    /// An instance drops the copies of feeds nobody used for `idleFeedLifetime` seconds (on its
    /// injected clock) and that nothing needs, and stops following them; a feed used since, or with a
    /// subscriber, stays. A dropped feed is read again on its next use, at its current version, and
    /// followed again.
    @Test func idleCopiesAreDroppedAndReadAgainOnTheirNextUse() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            let time = Mutex(0.0)
            let keys = RedisKeys(prefix: "diffstream")
            let store = try RedisStore.open(url: server.url, keys: keys, replay: 8, pingInterval: 0.2)
            let b = FeedRegistry(replayLimit: 8, transport: MemoryBroadcaster(), sharing: store, logger: Logger(label: "test"),
                                 idleFeedLifetime: 60, clock: { time.withLock { $0 } })
            let following = SharedFeedFollower(registry: b)
            await following.start(checkInterval: 3600)
            for name in ["used", "watched", "unused"] { _ = try await a.registry.write(name, snapshot: Self.snapshot([1])) }
            for name in ["used", "unused"] { #expect(try await b.read(name)?.version == 1) }
            let watching = MemorySink()
            try await #require(await b.read("watched")).subscribe(watching, lastEventID: nil)
            let admin = try RedisConnection(url: server.url, timeout: 2)
            func followers(_ name: String) throws -> Int? { try Self.followers(name, admin: admin) }
            func until(_ name: String, has count: Int) async throws -> Bool { try await Self.until(name, has: count, admin: admin) }
            // A (which wrote them) and B follow all three.
            for name in ["used", "watched", "unused"] { #expect(try await until(name, has: 2)) }

            time.withLock { $0 = 50 }
            let used = try #require(await b.read("used"))
            #expect(await used.version == 1)
            time.withLock { $0 = 61 }
            await b.sharedFeeds?.checkPositions()
            #expect(try await until("unused", has: 1), "unused for 61 s: dropped")
            #expect(try followers("used") == 2, "used 11 s ago: kept")
            #expect(try followers("watched") == 2, "a subscriber keeps it")
            // A held copy's document memo is found without a hop (a PUT reads again only the items that
            // changed); a dropped copy's is gone with it.
            #expect(b.documentMemo("used") === used.documentMemo)
            #expect(b.documentMemo("unused") == nil)

            time.withLock { $0 = 111 }
            await b.sharedFeeds?.checkPositions()
            #expect(try await until("used", has: 1))
            #expect(try followers("watched") == 2)

            // Written on A while B does not follow it: B reads it again, current, and follows it again.
            _ = try await a.registry.write("unused", snapshot: Self.snapshot([1, 2]))
            #expect(try await b.read("unused")?.version == 2)
            let late = MemorySink()
            try await #require(await b.read("unused")).subscribe(late, lastEventID: nil)
            #expect(try await until("unused", has: 2))
            _ = try await a.registry.write("unused", snapshot: Self.snapshot([1, 2, 3]))
            #expect(Self.versions(await Self.events(late, upTo: 3)) == [2, 3])

            // A copy in use counts as used at every check: the 60 s run from when its subscriber left.
            let watched = try #require(await b.read("watched"))
            time.withLock { $0 = 200 }
            await b.sharedFeeds?.checkPositions()  // in use: used now (200)
            watching.disconnect()
            #expect(await eventually { await watched.subscriberCount == 0 })
            time.withLock { $0 = 259 }
            await b.sharedFeeds?.checkPositions()
            #expect(try followers("watched") == 2, "idle for 59 s: kept")
            time.withLock { $0 = 261 }
            await b.sharedFeeds?.checkPositions()
            #expect(try await until("watched", has: 1), "idle for 61 s: dropped")
            await following.stop()
            store.close()
            await a.close()
        }
    }

    /// Events that stop while commands work (an ACL without the channels: Redis drops the subscriber
    /// and refuses its SUBSCRIBE from then on): subscribers are told `unavailable` once, and position
    /// checks that succeed do not say `available` while no other instance's commit can arrive. Once
    /// the channels are allowed again, `available` comes, then the commits.
    @Test func eventsThatStopWhileCommandsWorkAreAnOutageUntilTheyComeBack() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1]))
            let sink = MemorySink()
            try await #require(await b.registry.read("news")).subscribe(sink, lastEventID: nil)
            #expect(await sink.next()?.type == "snapshot")
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try admin.command(["ACL", "SETUSER", "default", "resetchannels"]) == .status("OK"))
            #expect(await sink.next()?.type == "unavailable")
            await b.registry.sharedFeeds?.checkPositions()
            await b.registry.sharedFeeds?.checkPositions()
            #expect(!sink.text.contains("event: available"))
            #expect(try admin.command(["ACL", "SETUSER", "default", "allchannels"]) == .status("OK"))
            #expect(await sink.next()?.type == "available")
            _ = try await a.registry.write("news", snapshot: Self.snapshot([1, 2]))
            #expect(Self.versions(await Self.events(sink, upTo: 2)).last == 2)
            await a.close(); await b.close()
        }
    }
}
