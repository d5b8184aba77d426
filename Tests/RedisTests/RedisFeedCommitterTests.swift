import Foundation
import Testing
import FeedStorage
import Redis
@testable import RedisFeedStore

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisFeedCommitterTests {
    /// A committer on a fresh server, with an epoch made as a start would (`SET NX`).
    struct Fixture: Sendable {
        let server: RedisTestServer
        let client: RedisClient
        let committer: RedisFeedCommitter
        let epoch = "e1"

        init(server: RedisTestServer, prefix: String = "t") async throws {
            self.server = server
            client = RedisClient(url: server.url, timeout: 2)
            committer = RedisFeedCommitter(client: client, keys: RedisKeys(prefix: prefix), writeTTL: 600)
            _ = try await client.command("SET", committer.keys.epoch, epoch, "NX")
        }

        func write(_ feed: String = "news", base: Int, history: String = "h1", batch: String? = nil, id: String = RandomID.perWrite(),
                   window: Int = 100, fence: String? = nil, answer: String = "") -> RedisFeedWrite {
            RedisFeedWrite(feed: feed, epoch: epoch, baseVersion: base, history: history, snapshot: Array("snapshot \(base + 1)".utf8),
                           viewState: Array("state \(base + 1)".utf8), batch: Array((batch ?? (base == 0 ? "" : "batch \(base + 1)")).utf8),
                           window: window, writeID: id, fence: fence, answer: Array(answer.utf8))
        }

        func stored(_ feed: String = "news") async throws -> (version: Int, history: String?, snapshot: String?, state: String?) {
            let reply = try await client.command("HMGET", committer.keys.feed(feed), "version", "history", "snapshot", "state")
            let fields = reply.array ?? []
            return (fields[0].integer ?? 0, fields[1].string, fields[2].string, fields[3].string)
        }

        func streamVersions(_ feed: String = "news") async throws -> [Int] {
            let reply = try await client.command("XRANGE", committer.keys.batches(feed), "-", "+")
            return (reply.array ?? []).compactMap { entry in entry.array?.first?.string.flatMap { Int($0.split(separator: "-")[0]) } }
        }
    }

    @Test func aCommitStoresTheFeedAppendsTheBatchAndPublishes() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            let listener = try RedisConnection(url: server.url, timeout: 2)
            _ = try listener.command(["SUBSCRIBE", fixture.committer.keys.channel("news")])
            #expect(try await fixture.committer.commit(fixture.write(base: 0, answer: "created")) == .committed(version: 1, answer: Array("created".utf8), first: true))
            #expect(try await fixture.committer.commit(fixture.write(base: 1)) == .committed(version: 2, answer: [], first: true))
            let stored = try await fixture.stored()
            #expect(stored.version == 2 && stored.history == "h1" && stored.snapshot == "snapshot 2" && stored.state == "state 2")
            #expect(try await fixture.streamVersions() == [2])
            let messages = try (0..<2).map { _ in try listener.readReply() }
            // `<history> <version> <batch, snapshot and state lengths>\n` then the three, for the other instances' caches.
            #expect(messages.map { $0.array?[2].string } == ["h1 1 0 10 7\nsnapshot 1state 1", "h1 2 7 10 7\nbatch 2snapshot 2state 2"])
        }
    }

    @Test func theHistoryStreamIsCappedAtTheWindow() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0, window: 3))
            for base in 1..<10 { _ = try await fixture.committer.commit(fixture.write(base: base, window: 3)) }
            #expect(try await fixture.streamVersions() == [8, 9, 10])
        }
    }

    @Test func aStaleBaseOrAnotherHistoryIsAConflict() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            _ = try await fixture.committer.commit(fixture.write(base: 1))
            #expect(try await fixture.committer.commit(fixture.write(base: 1)) == .conflict(version: 2, history: "h1"))
            #expect(try await fixture.committer.commit(fixture.write(base: 0)) == .conflict(version: 2, history: "h1"))
            #expect(try await fixture.committer.commit(fixture.write(base: 2, history: "h2")) == .conflict(version: 2, history: "h1"))
            #expect(try await fixture.stored().version == 2)
        }
    }

    /// Two instances (two clients, two connections, two threads) write one feed at once, each computing
    /// against the version it read and retrying a lost race: the versions are contiguous, and every
    /// acknowledged write is one of them.
    @Test func twoWritersRacingGiveContiguousVersions() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            let perWriter = 40
            let acknowledged = try await withThrowingTaskGroup(of: [Int].self) { group in
                for writer in 0..<2 {
                    group.addTask {
                        let client = RedisClient(url: server.url, timeout: 2, name: "writer-\(writer)")
                        defer { client.stop() }
                        let committer = RedisFeedCommitter(client: client, keys: fixture.committer.keys, writeTTL: 600)
                        var versions: [Int] = []
                        while versions.count < perWriter {
                            var base = try await client.command("HGET", committer.keys.feed("news"), "version").integer ?? 0
                            while true {
                                switch try await committer.commit(fixture.write(base: base, batch: "w\(writer)")) {
                                case .committed(let version, _, true): versions.append(version)
                                case .conflict(let version, _): base = version; continue
                                case let other: Issue.record("unexpected \(other)")
                                }
                                break
                            }
                        }
                        return versions
                    }
                }
                var all: [Int] = []
                for try await versions in group { all += versions }
                return all
            }
            #expect(acknowledged.sorted() == Array(2...(1 + 2 * perWriter)))
            #expect(try await fixture.stored().version == 1 + 2 * perWriter)
            #expect(try await fixture.streamVersions() == Array(2...(1 + 2 * perWriter)))
        }
    }

    /// The answer to a commit is lost after Redis ran it: settling reads the write back.
    @Test func aLostAnswerIsResolvedByReadingBackTheWriteID() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            let write = fixture.write(base: 1, answer: "{\"version\":2}")
            let attempt = RandomID.perWrite()
            _ = try await fixture.committer.run(write, attempt: attempt)  // its answer is dropped: "lost"
            #expect(try await fixture.committer.resolve(feed: "news", writeID: write.writeID, attempt: attempt)
                    == .committed(version: 2, answer: Array("{\"version\":2}".utf8), first: false))
            #expect(try await fixture.stored().version == 2)
        }
    }

    /// The answer is lost before Redis ran the script (it is still on its way): settling gives the
    /// attempt up, and when the script arrives it changes nothing.
    @Test func anAttemptGivenUpBeforeItRunsChangesNothing() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            let write = fixture.write(base: 1)
            let attempt = RandomID.perWrite()
            #expect(try await fixture.committer.resolve(feed: "news", writeID: write.writeID, attempt: attempt) == .notCommitted)
            #expect(try await fixture.committer.run(write, attempt: attempt) == .notCommitted)
            #expect(try await fixture.stored().version == 1)
            // A new attempt of the same write goes through, once.
            #expect(try await fixture.committer.commit(write) == .committed(version: 2, answer: [], first: true))
            #expect(try await fixture.committer.run(write, attempt: attempt) == .committed(version: 2, answer: [], first: false))
            #expect(try await fixture.stored().version == 2)
        }
    }

    /// A Redis that holds a commit past the timeout (`CLIENT PAUSE`): the caller gets an error whose
    /// outcome is unknown, and once Redis answers again the write id says what happened.
    @Test func aCommitPausedPastTheTimeoutIsSettledNotRepeated() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            let admin = try RedisConnection(url: server.url, timeout: 2)
            let impatient = RedisClient(url: server.url, timeout: 0.2, name: "impatient")
            defer { impatient.stop() }
            let committer = RedisFeedCommitter(client: impatient, keys: fixture.committer.keys, writeTTL: 600)
            _ = try await impatient.command("PING")  // connected (and the scripts' cache empty) before the pause
            #expect(try admin.command(["CLIENT", "PAUSE", "10000", "WRITE"]) == .status("OK"))
            let write = fixture.write(base: 1, answer: "a")
            await #expect { try await committer.commit(write) } throws: { ($0 as? RedisError)?.outcomeUnknown == true }
            #expect(try admin.command(["CLIENT", "UNPAUSE"]) == .status("OK"))
            let settled = try await fixture.committer.commit(write)
            #expect(settled == .committed(version: 2, answer: Array("a".utf8), first: false) || settled == .committed(version: 2, answer: Array("a".utf8), first: true))
            #expect(try await fixture.stored().version == 2)
        }
    }

    @Test func anIdempotencyKeyReturnsTheFirstAnswer() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            let first = fixture.write(base: 1, id: "client-key-1", answer: "first")
            #expect(try await fixture.committer.commit(first) == .committed(version: 2, answer: Array("first".utf8), first: true))
            // A retry computed against the new version, with other content and answer: the first answer.
            let retry = fixture.write(base: 2, batch: "other", id: "client-key-1", answer: "second")
            #expect(try await fixture.committer.commit(retry) == .committed(version: 2, answer: Array("first".utf8), first: false))
            #expect(try await fixture.stored().version == 2)
            // The key is per feed.
            _ = try await fixture.committer.commit(fixture.write("other", base: 0))
            #expect(try await fixture.committer.commit(fixture.write("other", base: 1, id: "client-key-1", answer: "x"))
                    == .committed(version: 2, answer: Array("x".utf8), first: true))
        }
    }

    @Test func aMissingOrOtherEpochIsReportedAndNothingIsWritten() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            _ = try await fixture.client.command("FLUSHALL")
            #expect(try await fixture.committer.commit(fixture.write(base: 1)) == .epochChanged(current: nil))
            _ = try await fixture.client.command("SET", fixture.committer.keys.epoch, "e2")
            #expect(try await fixture.committer.commit(fixture.write(base: 0)) == .epochChanged(current: "e2"))
            #expect(try await fixture.stored().version == 0)
        }
    }

    @Test func aStaleLeaseHoldersCommitIsRefused() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.client.command("SET", fixture.committer.keys.lease("week"), "token-2")
            #expect(try await fixture.committer.commit(fixture.write("week", base: 0, fence: "token-1")) == .fenced(holder: "token-2"))
            #expect(try await fixture.committer.commit(fixture.write("week", base: 0, fence: "token-2")) == .committed(version: 1, answer: [], first: true))
            _ = try await fixture.client.command("DEL", fixture.committer.keys.lease("week"))
            #expect(try await fixture.committer.commit(fixture.write("week", base: 1, fence: "token-2")) == .fenced(holder: nil))
        }
    }

    @Test func aFlushedScriptCacheIsLoadedAgain() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            #expect(try await fixture.client.command("SCRIPT", "FLUSH") == .status("OK"))
            #expect(try await fixture.committer.commit(fixture.write(base: 1)) == .committed(version: 2, answer: [], first: true))
        }
    }

    @Test func prefixesKeepDeploymentsApart() async throws {
        try await RedisTestServer.with { server in
            let one = try await Fixture(server: server, prefix: "one")
            let two = try await Fixture(server: server, prefix: "two")
            defer { one.client.stop(); two.client.stop() }
            _ = try await one.committer.commit(one.write(base: 0))
            #expect(try await two.stored().version == 0)
            #expect(one.committer.keys.feed("news") == "one:v1:feed:news")
            #expect(two.committer.keys.write("news", id: "k:1") == "two:v1:write:news:k:1")
        }
    }

    /// A view model's change carries the state it was computed from: another state is a conflict.
    @Test func aChangeComputedFromAnotherStateIsAConflict() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))  // state "state 1"
            var stale = fixture.write(base: 1)
            stale.expectedState = Array("state 0".utf8)
            #expect(try await fixture.committer.commit(stale) == .conflict(version: 1, history: "h1"))
            var current = fixture.write(base: 1)
            current.expectedState = Array("state 1".utf8)
            #expect(try await fixture.committer.commit(current) == .committed(version: 2, answer: [], first: true))
        }
    }

    /// The bytes of every feed are counted in `usage`, whichever connection wrote them.
    @Test func theMostBytesAreCountedOverEveryFeed() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            var first = fixture.write("one", base: 0)
            first.maxBytes = 30
            #expect(try await fixture.committer.commit(first) == .committed(version: 1, answer: [], first: true))  // 10 bytes
            var second = fixture.write("two", base: 0)
            second.maxBytes = 30
            #expect(try await fixture.committer.commit(second) == .committed(version: 1, answer: [], first: true))  // 20
            var third = fixture.write("three", base: 0)
            third.maxBytes = 25
            #expect(try await fixture.committer.commit(third) == .limit(kind: "bytes", used: 20, most: 25))
            _ = try await fixture.committer.delete(feed: "one", epoch: fixture.epoch, writeID: "d")
            #expect(try await fixture.committer.commit(third) == .committed(version: 1, answer: [], first: true))
        }
    }
}
