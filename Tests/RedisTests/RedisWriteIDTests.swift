import Testing
import FeedStorage
import Redis
import Timekeeping
@testable import RedisFeedStore

/// The write ids kept per feed (issue 51, item 4): one hash and a capped sorted set per kind, not a key per write.
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisWriteIDTests {
    static func committer(_ server: RedisTestServer, keyedCap: Int = 3, drawnCap: Int = 2) async throws -> (RedisClient, RedisFeedCommitter) {
        let client = RedisClient(url: server.url, timeout: 2)
        let committer = RedisFeedCommitter(client: client, keys: RedisKeys(prefix: "ids"), keyedCap: keyedCap, drawnCap: drawnCap)
        _ = try await client.command("SET", committer.keys.epoch, "e1", "NX")
        return (client, committer)
    }

    static func write(base: Int, id: String, keyed: Bool, answer: String = "") -> RedisFeedWrite {
        RedisFeedWrite(feed: "news", epoch: "e1", baseVersion: base, history: "h1", snapshot: Array("s\(base + 1)".utf8), batch: Array((base == 0 ? "" : "b\(base + 1)").utf8),
                       window: 0, writeID: id, answer: Array(answer.utf8), clientKey: keyed)
    }

    @Test func idsAreCappedPerFeedAndKindAndNoKeyIsLeftPerWrite() async throws {
        try await RedisTestServer.with { server in
            let (client, committer) = try await Self.committer(server)
            defer { client.stop() }
            let keys = committer.keys
            for base in 0..<20 { _ = try await committer.commit(Self.write(base: base, id: "d\(base)", keyed: false)) }
            for n in 0..<6 { _ = try await committer.commit(Self.write(base: 20 + n, id: "k\(n)", keyed: true, answer: "answer \(n)")) }
            #expect(try await client.command("ZRANGE", keys.writeOrder("news", keyed: false), "0", "-1").array?.compactMap(\.string) == ["d18", "d19"])
            #expect(try await client.command("ZRANGE", keys.writeOrder("news", keyed: true), "0", "-1").array?.compactMap(\.string) == ["k3", "k4", "k5"])
            #expect(try await client.command("HLEN", keys.writes("news")).integer == 2 + 3 + 1)  // and ` trimmed`
            // Every key under the prefix: no key per write.
            let all = try await client.command("KEYS", "ids:*").array?.compactMap(\.string).sorted() ?? []
            #expect(all == [keys.drawn, keys.epoch, keys.feed("news"), keys.keyed, keys.usage, keys.writes("news")].sorted())
            for key in [keys.writes("news"), keys.keyed, keys.drawn] {
                #expect(try await client.command("TTL", key).integer.map { $0 > 86_000 } == true)
            }
            // A kept key gets its first answer; one dropped by the cap runs again.
            #expect(try await committer.commit(Self.write(base: 26, id: "k5", keyed: true)) == .committed(version: 26, answer: Array("answer 5".utf8), first: false))
            #expect(try await committer.commit(Self.write(base: 26, id: "k0", keyed: true)) == .committed(version: 27, answer: [], first: true))
        }
    }

    @Test func settlingAnIdThatMayHaveBeenDroppedIsUnknownNeverNotCommitted() async throws {
        try await RedisTestServer.with { server in
            let (client, committer) = try await Self.committer(server, drawnCap: 1)
            defer { client.stop() }
            // Never committed, nothing dropped: not committed.
            #expect(try await committer.resolve(feed: "news", writeID: "x", attempt: "a0", sentMillisecondsAgo: 10) == .notCommitted)
            // The lost attempt was sent before d0 was committed, however long the commits take on a busy machine.
            let sent = MonotonicClock.now()
            _ = try await committer.commit(Self.write(base: 0, id: "d0", keyed: false))
            _ = try await committer.commit(Self.write(base: 1, id: "d1", keyed: false))  // drops d0
            let ago = Int(((MonotonicClock.now() - sent) * 1000).rounded(.up))
            await #expect(throws: RedisError.self) { try await committer.resolve(feed: "news", writeID: "d0", attempt: "a1", sentMillisecondsAgo: ago) }
            // The attempt is given up all the same: it can no longer run.
            #expect(try await client.command("EXISTS", committer.keys.attempt("news", nonce: "a1")).integer == 1)
            #expect(try await committer.resolve(feed: "news", writeID: "d1", attempt: "a2") == .committed(version: 2, answer: [], first: false))
        }
    }

    @Test func anAnswerAnEarlierBuildKeptIsHonoured() async throws {
        try await RedisTestServer.with { server in
            let (client, committer) = try await Self.committer(server)
            defer { client.stop() }
            _ = try await committer.commit(Self.write(base: 0, id: "first", keyed: true))
            _ = try await client.command("SET", committer.keys.write("news", id: "old-key"), "done 1 kept by v1", "EX", "600")
            #expect(try await committer.commit(Self.write(base: 1, id: "old-key", keyed: true)) == .committed(version: 1, answer: Array("kept by v1".utf8), first: false))
            #expect(try await committer.resolve(feed: "news", writeID: "old-key", attempt: "a") == .committed(version: 1, answer: Array("kept by v1".utf8), first: false))
            let store = try RedisStore.open(url: server.url, keys: committer.keys, replay: 0)
            defer { store.close() }
            #expect(try await store.committedAnswer("news", writeID: "old-key")?.answer == Array("kept by v1".utf8))
            #expect(try await store.committedAnswer("news", writeID: "first")?.version == 1)
            // An answer recorded for a write that changed nothing is kept once, among the keyed ids.
            #expect(try await store.recordAnswer("news", writeID: "same", version: 1, answer: Array("one".utf8)) == nil)
            #expect(try await store.recordAnswer("news", writeID: "same", version: 1, answer: Array("two".utf8))?.answer == Array("one".utf8))
            #expect(try await client.command("ZSCORE", committer.keys.writeOrder("news", keyed: true), "same").string != nil)
        }
    }
}

extension RedisKeys {
    fileprivate var keyed: String { writeOrder("news", keyed: true) }
    fileprivate var drawn: String { writeOrder("news", keyed: false) }
}
