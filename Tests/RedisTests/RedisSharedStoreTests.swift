import FeedStorage
import Testing
import Redis
@testable import RedisFeedStore

/// The ``SharedFeedStore`` seam on Redis, two stores (two instances) on one real server, no HTTP:
/// commits with the version check, a write id's first answer, reads, the batches after a version,
/// positions and lost data, and the commits of one instance arriving at the other.
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason), .timeLimit(.minutes(3)))
struct RedisSharedStoreTests {
    static func put(_ name: String, _ version: Int, history: String = "h1") -> FeedWrite { RedisStoreTests.put(name, version, history: history) }
    static func batch(_ version: Int) -> [UInt8] { Array("b\(version)".utf8) }

    /// The next event, interruptions and the connection's `connected` skipped unless asked for.
    static func next(_ store: RedisStore, skippingInterruptions: Bool = true) async -> SharedStoreEvent? {
        for await event in store.events {
            if case .interrupted = event, skippingInterruptions { continue }
            if case .connected = event, skippingInterruptions { continue }
            return event
        }
        return nil
    }

    @Test func aCommitOnOneInstanceReachesAnotherThatFollowsTheFeed() async throws {
        try await RedisTestServer.with { server in
            let a = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 4)
            defer { a.close() }
            let b = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 4)
            defer { b.close() }
            #expect(a.epoch == b.epoch)
            a.follow("news")
            #expect(await Self.next(a) == .following("news"))
            #expect(try await a.read("news") == nil)
            #expect(await b.commit(FeedCommit(Self.put("news", 1), base: 0, writeID: "w1", clientKey: true, answer: Array("created".utf8)))
                    == .committed(version: 1, answer: Array("created".utf8), first: true))
            #expect(await b.commit(FeedCommit(Self.put("news", 2), base: 1, writeID: "w2", clientKey: true, answer: [])) == .committed(version: 2, answer: [], first: true))
            #expect(await Self.next(a) == .committed(name: "news", history: "h1", version: 1, batch: [], snapshot: Array("s1".utf8), state: nil))
            #expect(await Self.next(a) == .committed(name: "news", history: "h1", version: 2, batch: Self.batch(2), snapshot: Array("s2".utf8), state: nil))
            // A computed its batch against version 1: a conflict naming version 2; computed again, committed.
            #expect(await a.commit(FeedCommit(Self.put("news", 2), base: 1, writeID: "w3", clientKey: true, answer: [])) == .conflict(version: 2, history: "h1"))
            #expect(await a.commit(FeedCommit(Self.put("news", 3), base: 2, writeID: "w3", clientKey: true, answer: Array("third".utf8)))
                    == .committed(version: 3, answer: Array("third".utf8), first: true))
            // The same write id again (a client's retry with its Idempotency-Key): the first answer, nothing written.
            #expect(await b.commit(FeedCommit(Self.put("news", 4), base: 3, writeID: "w3", clientKey: true, answer: []))
                    == .committed(version: 3, answer: Array("third".utf8), first: false))
            let feed = try #require(try await b.read("news"))
            #expect(feed.version == 3 && feed.history == "h1" && feed.snapshot == Array("s3".utf8) && feed.batches.map(\.version) == [2, 3])
            #expect(try await b.batches("news", history: "h1", after: 1) == [2, 3].map { StoredBatch(version: $0, bytes: Self.batch($0)) })
            #expect(try await b.batches("news", history: "h1", after: 3) == [])
            #expect(try await b.batches("news", history: "h1", after: 0) == nil)  // version 1 made no batch: a snapshot
            #expect(try await b.batches("news", history: "h2", after: 2) == nil)
            // A view state at the stored version, then at an old one.
            #expect(await b.commit(FeedCommit(.viewState(name: "news", bytes: Array("st".utf8)), base: 3, writeID: "v1", clientKey: true, answer: []))
                    == .committed(version: 3, answer: [], first: true))
            #expect(await b.commit(FeedCommit(.viewState(name: "news", bytes: Array("old".utf8)), base: 2, writeID: "v2", clientKey: true, answer: []))
                    == .conflict(version: 3, history: "h1"))
            #expect(try await a.read("news")?.viewState == Array("st".utf8))
            #expect(await b.commit(FeedCommit(.delete(name: "news"), base: 0, writeID: "d1", clientKey: true, answer: [])) == .committed(version: 1, answer: [], first: true))
            // A's own commit (version 3) does not come back to it: the next message is B's view state.
            #expect(await Self.next(a) == .committed(name: "news", history: "h1", version: 3, batch: [], snapshot: nil, state: Array("st".utf8)))
            #expect(await Self.next(a) == .deleted(name: "news", history: "h1"))
            #expect(b.metrics().failedCommits == 1 && b.metrics().commits == 6)
        }
    }

    @Test func positionsSayWhereFeedsAreAndWhenRedisLostItsData() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(prefix: "p"), replay: 4)
            defer { store.close() }
            for version in 1...2 { _ = await store.commit(FeedCommit(Self.put("news", version), base: version - 1, writeID: "n\(version)", clientKey: true, answer: [])) }
            _ = await store.commit(FeedCommit(Self.put("other", 1, history: "h9"), base: 0, writeID: "o1", clientKey: true, answer: []))
            #expect(try await store.positions(["news", "other", "none"])
                    == StorePositions(intact: true, feeds: ["news": FeedPosition(history: "h1", version: 2), "other": FeedPosition(history: "h9", version: 1)]))
            #expect(try await store.positions([]) == StorePositions(intact: true, feeds: [:]))
            // An error answer to the epoch's GET (here an ACL's; -LOADING while Redis replays its AOF) is
            // an outage, not lost data.
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try admin.command(["ACL", "SETUSER", "default", "-get"]) == .status("OK"))
            await #expect(throws: StoreError.self) { try await store.positions(["news"]) }
            #expect(try admin.command(["ACL", "SETUSER", "default", "+get"]) == .status("OK"))
            #expect(try await store.positions([]) == StorePositions(intact: true, feeds: [:]))
            _ = try admin.command(["FLUSHALL"])
            #expect(try await store.positions(["news"]) == StorePositions(intact: false, feeds: [:]))
            #expect(await store.commit(FeedCommit(Self.put("news", 1), base: 0, writeID: "n9", clientKey: true, answer: [])) == .lostData)
        }
    }

    /// A client's key for a write that changed nothing keeps the first answer: a second record (a retry
    /// on another instance after the first attempt committed) gets that answer back, and keeps it.
    @Test func anAnswerRecordedForAKeyKeepsTheFirst() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(prefix: "r"), replay: 4)
            defer { store.close() }
            _ = await store.commit(FeedCommit(Self.put("news", 1), base: 0, writeID: "k", clientKey: true, answer: Array("0 1 2".utf8)))
            let kept = try await store.recordAnswer("news", writeID: "k", version: 1, answer: Array("0 1 0".utf8))
            #expect(kept?.version == 1 && kept?.answer == Array("0 1 2".utf8))
            #expect(try await store.recordAnswer("news", writeID: "fresh", version: 1, answer: Array("0 1 0".utf8)) == nil)
            #expect(try await store.committedAnswer("news", writeID: "fresh")?.answer == Array("0 1 0".utf8))
            #expect(try await store.recordAnswer("news", writeID: "fresh", version: 2, answer: Array("0 2 0".utf8))?.answer == Array("0 1 0".utf8))
        }
    }

    /// `CLIENT KILL TYPE pubsub`: the store follows the feed again at once (its owner then checks the
    /// position), with no interruption to tell of since the new connection works, and later commits arrive.
    @Test func aLostPubSubConnectionIsFollowedAgain() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 4)
            defer { store.close() }
            store.follow("news")
            #expect(await Self.next(store) == .following("news"))
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try admin.command(["CLIENT", "KILL", "TYPE", "pubsub"]) == .integer(1))
            var event = await Self.next(store, skippingInterruptions: false)
            if event == .connected { event = await Self.next(store, skippingInterruptions: false) }  // the first connection's
            #expect(event == .following("news"))
            #expect(await Self.next(store, skippingInterruptions: false) == .connected)  // every channel subscribed again
            let other = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 4)  // another instance's commit
            defer { other.close() }
            _ = await other.commit(FeedCommit(Self.put("news", 1), base: 0, writeID: "w1", clientKey: true, answer: []))
            #expect(await Self.next(store) == .committed(name: "news", history: "h1", version: 1, batch: [], snapshot: Array("s1".utf8), state: nil))
        }
    }

    /// Payloads from the channel, as the seam says them (no server).
    @Test(arguments: [
        ("diffstream:v1:publish:news", "h1 4 12 2 -1\nevent: batchs4",
         SharedStoreEvent.committed(name: "news", history: "h1", version: 4, batch: Array("event: batch".utf8), snapshot: Array("s4".utf8), state: nil)),
        ("diffstream:v1:publish:news", "h1 4 0 -1 5\n{\"a\"}", .committed(name: "news", history: "h1", version: 4, batch: [], snapshot: nil, state: Array("{\"a\"}".utf8))),
        ("diffstream:v1:publish:news", "h1 1 0 2 2\ns1{}", .committed(name: "news", history: "h1", version: 1, batch: [], snapshot: Array("s1".utf8), state: Array("{}".utf8))),
        ("diffstream:v1:publish:news", "h1 0\n", .deleted(name: "news", history: "h1")),
        ("diffstream:v1:publish:news", "h1 4 12 2 -1 other\nevent: batchs4",  // another instance's commit
         .committed(name: "news", history: "h1", version: 4, batch: Array("event: batch".utf8), snapshot: Array("s4".utf8), state: nil)),
        ("diffstream:v1:publish:news", "h1 4 12 2 -1 me\nevent: batchs4", nil),  // this instance's own
        ("diffstream:v1:publish:news", "h1 4 0 -1 5 me\n{\"a\"}", nil),
        ("diffstream:v1:publish:news", "h1 4 12 2 -1 me extra\nevent: batchs4", nil),  // too many fields
        ("diffstream:v1:publish:news", "h1 4 12 2 -1\nshort", nil),  // the lengths do not add up
        ("diffstream:v1:publish:news", "h1 4\nevent: batch", nil),  // the old format
        ("other:v1:publish:news", "h1 4 0 0 -1\n", nil),
        ("diffstream:v1:publish:news", "no newline", nil),
        ("diffstream:v1:publish:news", "h1 4 12 2 -1 meme\nevent: batchs4",  // an id that only starts with ours
         .committed(name: "news", history: "h1", version: 4, batch: Array("event: batch".utf8), snapshot: Array("s4".utf8), state: nil)),
        ("diffstream:v1:publish:news", "h1  4 12 2  -1\nevent: batchs4",  // runs of spaces separate fields
         .committed(name: "news", history: "h1", version: 4, batch: Array("event: batch".utf8), snapshot: Array("s4".utf8), state: nil)),
        ("diffstream:v1:publish:news", "h1 x4 0 -1 5\n{\"a\"}", nil),  // not a number
        ("diffstream:v1:publish:news", "h1 4 -12 2 -1\nevent: batchs4", nil),  // a negative batch length
        ("diffstream:v1:publish:news", "h1 4 99999999999999999999 2 -1\ns4", nil),  // past Int
        ("diffstream:v1:publish:news", "h1 4 0 - 5\n{\"a\"}", nil),  // a sign alone
    ] as [(String, String, SharedStoreEvent?)])
    func messagesAreTranslated(channel: String, payload: String, expected: SharedStoreEvent?) {
        #expect(RedisStore.translate(.message(channel: channel, payload: Array(payload.utf8)), channelPrefix: RedisKeys().channel(""), skipping: "me") == expected)
    }
}
