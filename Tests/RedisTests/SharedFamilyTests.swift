import Foundation
@testable import FeedServer
import FeedReplication
import FeedStorage
import Redis
import Synchronization
import Testing
import TestSupport
@testable import RedisFeedStore

/// Families (issue 38) on a store several instances share: a member's feed is a shared feed, made on
/// any instance, its actions run once whichever instance takes them, and dropping it on one instance
/// keeps its state in Redis.
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason), .timeLimit(.minutes(3)))
struct SharedFamilyTests {
    /// A value the tests and a family's closures share.
    final class Cell<Value: Sendable>: Sendable {
        private let mutex: Mutex<Value>
        init(_ value: Value) { mutex = Mutex(value) }
        var value: Value {
            get { mutex.withLock { $0 } }
            set { mutex.withLock { $0 = newValue } }
        }
    }

    typealias Instance = SharedFeedRegistryTests.Instance
    typealias Shelf = SharedFeedRegistryTests.Shelf

    /// A family of shelves on `instance`, whose loader counts its runs in `loads` and starts a shelf with
    /// `initial`; time passes only when `time` moves.
    static func family(on instance: Instance, truth: FamilyTruth, loads: Cell<Int> = Cell(0), time: Cell<Double> = Cell(0),
                       initial: [String] = []) -> ViewModelFamily<Shelf> {
        ViewModelFamily(prefix: "shelf", model: Shelf(), limits: FamilyLimits(idle: 10), truth: truth, registry: instance.registry,
                        clock: { time.value }) { _ in
            loads.value += 1
            return Shelf.State(names: initial)
        }
    }

    static func add(_ name: String) -> [UInt8] { Array(#"{"name":"\#(name)"}"#.utf8) }

    static func names(in store: RedisStore, _ feed: String) async throws -> [String] {
        let bytes = try #require(try await store.read(feed)?.viewState)
        return try JSONDecoder().decode(Shelf.State.self, from: Data(bytes)).names
    }

    /// An action sent to B on a member whose subscriber is on A runs once: A's and B's subscribers each
    /// get one batch, and a retry with its key on A gets the first answer. Actions taken on A and B at
    /// once both apply, each once.
    @Test func anActionRunsOnceWhicheverInstanceTakesIt() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            let onA = Self.family(on: a, truth: .program), onB = Self.family(on: b, truth: .program)
            _ = try await onA.member("alice")
            let watchingA = MemorySink(), watchingB = MemorySink()
            try await #require(await a.registry.read("shelf.alice")).subscribe(watchingA, lastEventID: nil)
            _ = try await onB.member("alice")
            try await #require(await b.registry.read("shelf.alice")).subscribe(watchingB, lastEventID: nil)

            let added = try await onB.member("alice").perform("add", body: Self.add("x"), writeID: "k")
            #expect(added == FeedWriteResult(created: false, version: 2, operations: 1))
            let retried = try await onA.member("alice").perform("add", body: Self.add("x"), writeID: "k")
            #expect(retried.replayed && retried.version == 2)
            for sink in [watchingA, watchingB] {
                let events = await SharedFeedRegistryTests.events(sink, upTo: 2)
                #expect(events.map(\.type) == ["snapshot", "batch"])
            }

            async let onFirst = onA.member("alice").perform("add", body: Self.add("y"), writeID: nil)
            async let onSecond = onB.member("alice").perform("add", body: Self.add("z"), writeID: nil)
            let versions = try await [onFirst.version, onSecond.version].sorted()
            #expect(versions == [3, 4])
            #expect(try await Self.names(in: a.store, "shelf.alice").sorted() == ["x", "y", "z"])
            for sink in [watchingA, watchingB] {
                #expect(SharedFeedRegistryTests.versions(await SharedFeedRegistryTests.events(sink, upTo: 4)) == [3, 4])
            }
            await onA.stop(); await onB.stop()
            await a.close(); await b.close()
        }
    }

    /// A member made on another instance when it is live nowhere: with `.kept`, it starts from the state
    /// Redis holds, at the same version and history (the loader runs, for its sources, and its render
    /// is not used); with `.program`, its render is one batch of the same history.
    @Test(arguments: [FamilyTruth.kept, .program])
    func aMemberMadeOnAnotherInstanceGoesOnFromRedis(truth: FamilyTruth) async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            let loads = Cell(0)
            let onA = Self.family(on: a, truth: truth, loads: loads, initial: ["first"])
            let onB = Self.family(on: b, truth: truth, loads: loads, initial: ["first"])
            _ = try await onA.member("bob").perform("add", body: Self.add("x"), writeID: nil)
            let before = try #require(try await a.store.read("shelf.bob"))
            #expect(before.version == 2)
            // As if A had dropped bob more than 5 s ago: its record of bob live there has run out.
            let set = FamilyShards.interestSet(family: "shelf", shard: FamilyShards().shard(of: "bob"))
            _ = try RedisConnection(url: server.url, timeout: 2).command(["DEL", RedisKeys(prefix: "diffstream").interest(set)])

            let member = try await onB.member("bob")
            let after = try #require(try await b.store.read("shelf.bob"))
            #expect(after.history == before.history)
            switch truth {
            case .kept:
                #expect(loads.value == 2, "B ran the loader, for its sources, and restored Redis's state")
                #expect(await member.state.names == ["first", "x"])
                #expect(after.version == 2)
            case .program:
                #expect(loads.value == 2, "B ran the loader")
                #expect(await member.state.names == ["first"])
                #expect(after.version == 3, "the render is one batch of the same history")
            }
            await onA.stop(); await onB.stop()
            await a.close(); await b.close()
        }
    }

    /// A member made on an instance while it is live on another (recorded in its shard's interest) is
    /// taken as Redis holds it: the loader runs (for its sources), and its render is not published.
    @Test func aMemberLiveOnAnotherInstanceIsTakenAsItIs() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            let loads = Cell(0)
            let onA = Self.family(on: a, truth: .program, loads: loads, initial: ["first"])
            let onB = Self.family(on: b, truth: .program, loads: loads, initial: ["first"])
            _ = try await onA.member("dora").perform("add", body: Self.add("x"), writeID: nil)  // A records dora live there as it makes her

            let member = try await onB.member("dora")
            #expect(loads.value == 2)
            #expect(await member.state.names == ["first", "x"])
            #expect(try await a.store.read("shelf.dora")?.version == 2, "nothing published")
            await onA.stop(); await onB.stop()
            await a.close(); await b.close()
        }
    }

    /// A key's source runs on the instance holding its shard's lease (one shard here, so every key
    /// shares it): an element its source yields on both instances is applied once, by the holder; a
    /// key live only on the other instance is made live on the holder, where its source then runs
    /// (with `.kept` too: the loader that attaches it runs on every make).
    @Test(arguments: [FamilyTruth.program, .kept])
    func aKeysSourceRunsOnTheHolderOfItsShard(truth: FamilyTruth) async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            let streams = Mutex<[String: AsyncStream<String>.Continuation]>([:])
            func family(_ instance: Instance, _ label: String) -> ViewModelFamily<Shelf> {
                ViewModelFamily(prefix: "shelf", model: Shelf(), limits: FamilyLimits(idle: 600), truth: truth, registry: instance.registry,
                                shards: FamilyShards(count: 1), clock: { 0 }) { member in
                    let (stream, continuation) = AsyncStream.makeStream(of: String.self)
                    streams.withLock { $0[label + member.key] = continuation }
                    member.follow(stream) { state, name in state.names.append(name) }
                    return Shelf.State()
                }
            }
            func yield(_ name: String, to keys: [String]) {
                streams.withLock { for key in keys { $0[key]?.yield(name) } }
            }
            let onA = family(a, "A"), onB = family(b, "B")
            _ = try await onA.member("dan")
            // A made the first member: its shard's lease is A's once its keeper took it.
            #expect(await eventually { await onA.tendShards(); return await onA.shardsHeldNow == 1 })
            _ = try await onB.member("dan")
            await onB.tendShards()
            #expect(await onB.shardsHeldNow == 0)

            yield("y", to: ["Adan", "Bdan"])
            #expect(await eventually { (try? await Self.names(in: a.store, "shelf.dan")) == ["y"] })
            yield("z", to: ["Adan", "Bdan"])
            #expect(await eventually { (try? await Self.names(in: a.store, "shelf.dan")) == ["y", "z"] })

            // Erin is live on B only: B records it, and A, holding the shard, makes it live too.
            _ = try await onB.member("erin")
            await onB.tendShards()
            await onA.tendShards()
            #expect(await eventually { streams.withLock { $0["Aerin"] != nil } })
            yield("w", to: ["Berin"])
            yield("v", to: ["Aerin"])
            #expect(await eventually { (try? await Self.names(in: a.store, "shelf.erin")) == ["v"] })
            await onA.stop(); await onB.stop()
            await a.close(); await b.close()
        }
    }

    /// The holder of a shard keeps live the keys live on other instances, not its own: those idle out
    /// as without Redis.
    @Test func aHoldersOwnMembersIdleOut() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            let time = Cell(0.0)
            let onA = Self.family(on: a, truth: .program, time: time)
            _ = try await onA.member("fay")
            #expect(await eventually { await onA.tendShards(); return await onA.shardsHeldNow == 1 })
            time.value = 11
            await onA.tendShards()
            await onA.expire()
            #expect(await onA.liveCount == 0)
            await onA.tendShards()
            #expect(await onA.shardsHeldNow == 0, "a shard with no key live anywhere is given up")
            await onA.stop()
            await a.close()
        }
    }

    /// A shard lease's token fences the commits of every feed against that lease: a holder that lost it
    /// (it expired, another took it) cannot commit with its old token.
    @Test func aShardLeasesTokenFencesItsMembersCommits() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            let lease = FamilyShards.leaseName(family: "shelf", shard: 3)
            // Leases long enough never to lapse during the test, however loaded the machine (a 5 s one
            // lapsed before the first write in CI): the second is taken over the first by deleting it.
            let first = try #require(try await a.store.acquireLease(lease, milliseconds: 600_000))
            _ = try await a.registry.write("shelf.gil", snapshot: SharedFeedRegistryTests.snapshot([1]), options: FeedWriteOptions(fence: first))
            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try admin.command(["DEL", RedisKeys(prefix: "diffstream").lease(lease)])
            let second = try #require(try await a.store.acquireLease(lease, milliseconds: 600_000))
            await #expect(throws: FeedWriteError.fenced) {
                try await a.registry.write("shelf.gil", snapshot: SharedFeedRegistryTests.snapshot([1, 2]), options: FeedWriteOptions(fence: first))
            }
            #expect(try await a.registry.write("shelf.gil", snapshot: SharedFeedRegistryTests.snapshot([1, 2]), options: FeedWriteOptions(fence: second)).version == 2)
            await a.close()
        }
    }

    /// Interest recorded in one call for several sets is read back per set, sorted, until its time (on
    /// Redis's clock) ends unless recorded again; a set of more keys than one `ZADD` takes is whole.
    @Test func interestLastsItsTimeUnlessRecordedAgain() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server)
            let many = (0..<2_500).map { "u\($0) me" }
            try await a.store.recordInterest(["home:1": ["bob me", "alice you"], "home:2": ["carol me"], "home:3": many, "home:4": []], milliseconds: 60_000)
            #expect(try await a.store.interest(in: "home:1") == ["alice you", "bob me"])
            #expect(try await a.store.interest(in: "home:2") == ["carol me"])
            #expect(try await a.store.interest(in: "home:3").count == 2_500)
            #expect(try await a.store.interest(in: "home:4") == [])
            try await a.store.recordInterest(["home:2": ["dan me"]], milliseconds: 1)
            #expect(await eventually { (try? await a.store.interest(in: "home:2")) == ["carol me"] }, "dan's 1 ms ran out; carol's 60 s did not")
            await a.close()
        }
    }

    /// A member dropped as idle on one instance leaves its state in Redis: made again there (or served
    /// by another instance meanwhile) it goes on from it.
    @Test func droppingAMemberKeepsItsStateInRedis() async throws {
        try await RedisTestServer.with { server in
            let a = try await Instance(server), b = try await Instance(server)
            let time = Cell(0.0)
            let onA = Self.family(on: a, truth: .kept, time: time), onB = Self.family(on: b, truth: .kept)
            _ = try await onA.member("carol").perform("add", body: Self.add("x"), writeID: nil)
            time.value = 11
            await onA.expire()
            #expect(await onA.liveCount == 0)
            #expect(try await Self.names(in: a.store, "shelf.carol") == ["x"])

            _ = try await onB.member("carol").perform("add", body: Self.add("y"), writeID: nil)
            let again = try await onA.member("carol")
            #expect(await again.state.names == ["x", "y"])
            let added = try await again.perform("add", body: Self.add("z"), writeID: nil)
            #expect(added.version == 4)
            await onA.stop(); await onB.stop()
            await a.close(); await b.close()
        }
    }
}
