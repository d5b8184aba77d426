import DiffStreamJSON
import FeedCore
import HTTPAPI
import Testing
import TestSupport

/// `GET /feeds/{feed}/log` through a server on port 0: the contract of reads by position (issue 54).
struct LogRouteTests {
    static func document(_ items: Int) -> String {
        let list = (0..<items).map { #"{"id":"\#($0)","kind":"k","model":\#($0)}"# }.joined(separator: ",")
        return #"{"sections":[{"id":"s","model":null,"items":[\#(list)]}]}"#
    }

    /// Writes `f` from version `from` through `through` (one item more each).
    static func write(_ server: TestServer, _ name: String = "f", through: Int, from: Int = 1, token: String? = nil) async throws {
        for version in from...through {
            let reply = try await server.request("PUT", "/feeds/\(name)", body: document(version), headers: token.map { ["Authorization: Bearer \($0)"] } ?? [])
            #expect(reply.status < 300)
        }
    }

    static func history(_ server: TestServer, _ name: String = "f") async throws -> String {
        let feed = try #require(await server.registry.read(name))
        return await feed.history
    }

    /// The versions of a reply's batches.
    static func versions(_ reply: TestServer.Reply) -> [Int]? {
        reply.json?["batches"]?.arrayValue?.map { Int($0["version"]?.numberValue ?? -1) }
    }

    @Test func theStartIsTheSnapshotAndCacheableBriefly() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 3)
        let reply = try await server.request("GET", "/feeds/f/log")
        let history = try await Self.history(server)
        #expect(reply.status == 200)
        #expect(reply.header("Cache-Control") == "public, max-age=5")
        let json = try #require(reply.json)
        #expect(json["snapshot"]?["version"] == 3)
        #expect(json["snapshot"]?["sections"]?.arrayValue?.first?["items"]?.arrayValue?.count == 3)
        #expect(json["batches"] == [])
        #expect(json["next"] == .string("ds1.\(history).3"))
        #expect(json["upToDate"] == true)
        #expect(json["cursor"]?.stringValue.flatMap(Int.init) != nil)
    }

    /// Chunks end at multiples of 64: a whole one is immutable, the one up to the head is not.
    @Test func chunksEndAtMultiplesOf64() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 70)
        let history = try await Self.history(server)
        let whole = try await server.request("GET", "/feeds/f/log?after=ds1.\(history).1")
        #expect(whole.status == 200)
        #expect(whole.header("Cache-Control") == "public, max-age=31536000, immutable")
        let batches = try #require(whole.json?["batches"]?.arrayValue)
        #expect(Self.versions(whole) == Array(2...64))
        #expect(batches.first?["from"] == 1 && batches.first?["history"] == .string(history))
        #expect(whole.json?["next"] == .string("ds1.\(history).64") && whole.json?["upToDate"] == false)
        let rest = try await server.request("GET", "/feeds/f/log?after=ds1.\(history).64")
        #expect(rest.header("Cache-Control") == "public, max-age=5")
        #expect(Self.versions(rest) == Array(65...70))
        #expect(rest.json?["next"] == .string("ds1.\(history).70") && rest.json?["upToDate"] == true)
        let none = try await server.request("GET", "/feeds/f/log?after=ds1.\(history).70")
        #expect(none.json?["batches"] == [] && none.json?["next"] == .string("ds1.\(history).70"))
        #expect(none.header("Cache-Control") == "public, max-age=5")
    }

    @Test(arguments: ["?live=1", "?after=ds1.0123456789abcdef.1&cursor=2", "?after=x", "?after=ds1.0123456789abcdef.1&live=2", "?foo=1"])
    func badQueriesAre400AndNeverStored(_ query: String) async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 1)
        let reply = try await server.request("GET", "/feeds/f/log\(query)")
        #expect(reply.status == 400)
        #expect(reply.json?["error"] == "bad query")
        #expect(reply.header("Cache-Control") == "no-store")
    }

    @Test func anotherHistoryOrAnOldPositionStartsOver() async throws {
        let server = try TestServer(replayLimit: 4)
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 12)
        let history = try await Self.history(server)
        for position in ["ds1.ffffffffffffffff.3", "ds1.\(history).1", "ds1.\(history).13"] {
            let reply = try await server.request("GET", "/feeds/f/log?after=\(position)")
            #expect(reply.status == 409, "\(position)")
            #expect(reply.json?["error"] == "start over" && reply.json?["start"] == "/feeds/f/log" && reply.json?["feed"] == "f")
            #expect(reply.header("Cache-Control") == "no-store")
        }
    }

    @Test func aMissingFeedIs404NeverStored() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        let reply = try await server.request("GET", "/feeds/nothing/log")
        #expect(reply.status == 404 && reply.json?["detail"] == "no feed named 'nothing'")
        #expect(reply.header("Cache-Control") == "no-store")
    }

    /// A live read at the head waits for the next batch and answers it; the feed counts it.
    @Test func aLiveReadAtTheHeadGetsTheNextBatch() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 2)
        let history = try await Self.history(server)
        let reader = Task { try await server.request("GET", "/feeds/f/log?after=ds1.\(history).2&live=1&cursor=5") }
        let feed = try #require(await server.registry.read("f"))
        #expect(await eventually { await feed.subscriberCount == 1 })
        try await Self.write(server, through: 3, from: 3)
        let reply = try await reader.value
        #expect(reply.status == 200)
        #expect(reply.header("Cache-Control") == "public, max-age=5")
        #expect(Self.versions(reply) == [3])
        #expect(reply.json?["next"] == .string("ds1.\(history).3") && reply.json?["upToDate"] == true)
        #expect(reply.json?["cursor"] != "5")
    }

    /// A live read behind the head answers at once, as without `live`.
    @Test func aLiveReadBehindTheHeadAnswersAtOnce() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 3)
        let history = try await Self.history(server)
        let reply = try await server.request("GET", "/feeds/f/log?after=ds1.\(history).1&live=1")
        #expect(Self.versions(reply) == [2, 3])
    }

    /// No batch within the wait: `200` with no batches, the same position, and a cursor past the reader's.
    @Test func anEmptyWaitAnswersNoBatchesAndANewCursor() async throws {
        let server = try TestServer { $0.longPollSeconds = 0.05 }
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 1)
        let history = try await Self.history(server)
        let far = 9_000_000_000_000
        let reply = try await server.request("GET", "/feeds/f/log?after=ds1.\(history).1&live=1&cursor=\(far)")
        #expect(reply.status == 200)
        #expect(reply.json?["batches"] == [] && reply.json?["upToDate"] == true && reply.json?["next"] == .string("ds1.\(history).1"))
        let cursor = try #require(reply.json?["cursor"]?.stringValue.flatMap(Int.init))
        #expect((far + 1...far + 3).contains(cursor))
    }

    @Test func aFeedDeletedDuringAWaitIs404() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 1)
        let history = try await Self.history(server)
        let reader = Task { try await server.request("GET", "/feeds/f/log?after=ds1.\(history).1&live=1") }
        let feed = try #require(await server.registry.read("f"))
        #expect(await eventually { await feed.subscriberCount == 1 })
        #expect(try await server.request("DELETE", "/feeds/f").status == 204)
        let reply = try await reader.value
        #expect(reply.status == 404 && reply.header("Cache-Control") == "no-store")
    }

    @Test func endingLongPollsAnswersWaitingReaders() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 1)
        let history = try await Self.history(server)
        let reader = Task { try await server.request("GET", "/feeds/f/log?after=ds1.\(history).1&live=1") }
        let feed = try #require(await server.registry.read("f"))
        #expect(await eventually { await feed.subscriberCount == 1 })
        server.api.endLongPolls()
        let reply = try await reader.value
        #expect(reply.status == 503 && reply.header("Cache-Control") == "no-store")
    }

    /// A feed that needs a token: every answer is the reader's own, never stored.
    @Test func aPrivateFeedsAnswersAreNeverStored() async throws {
        let server = try TestServer(token: "secret") { $0.privateReads = true }
        defer { Task { await server.stop() } }
        try await Self.write(server, through: 2, token: "secret")
        let history = try await Self.history(server)
        let auth = ["Authorization: Bearer secret"]
        let start = try await server.request("GET", "/feeds/f/log", headers: auth)
        #expect(start.status == 200 && start.header("Cache-Control") == "private, no-store")
        let batches = try await server.request("GET", "/feeds/f/log?after=ds1.\(history).1", headers: auth)
        #expect(batches.status == 200 && batches.header("Cache-Control") == "private, no-store")
        let anonymous = try await server.request("GET", "/feeds/f/log")
        #expect(anonymous.status == 401 && anonymous.header("Cache-Control") == "private, no-store")
        let missing = try await server.request("GET", "/feeds/f/log?after=x", headers: auth)
        #expect(missing.status == 400 && missing.header("Cache-Control") == "private, no-store")
    }

    /// A family's member is made on its first read, and a live read at its head is woken by its next
    /// change (an action), as a stream would be.
    @Test func aFamilysMemberIsReadAndFollowed() async throws {
        let server = try TestServer()
        defer { Task { await server.stop() } }
        _ = try await server.hosted.host(family: "count", Counter()) { member in Counter.State(count: 1, label: member.key) }
        let start = try await server.request("GET", "/feeds/count.alice/log")
        #expect(start.status == 200)
        let next = try #require(start.json?["next"]?.stringValue)
        #expect(start.json?["snapshot"]?["version"] == 1)
        let reader = Task { try await server.request("GET", "/feeds/count.alice/log?after=\(next)&live=1") }
        let feed = try #require(await server.registry.read("count.alice"))
        #expect(await eventually { await feed.subscriberCount == 1 })
        #expect(try await server.request("POST", "/feeds/count.alice/actions/increment", body: "{}").status == 200)
        let reply = try await reader.value
        #expect(reply.status == 200 && Self.versions(reply) == [2])
    }

    /// A live read woken by several batches at once answers those up to its chunk's end, and says
    /// whether more follow; a batch of another history or after a gap is not taken.
    @Test func theBatchesAWakingEventCarries() {
        let history = "0123456789abcdef"
        func batch(_ version: Int, _ history: String = history) -> EventFields {
            EventFields(type: "batch", id: EventID(history: history, version: version).description, data: Array("{\"v\":\(version)}".utf8))
        }
        let at62 = EventID(history: history, version: 62)
        let (two, head) = FeedAPI.batches(in: [batch(63), batch(64), batch(65)], after: at62)
        #expect(two.map { String(decoding: $0, as: UTF8.self) } == [#"{"v":63}"#, #"{"v":64}"#])
        #expect(head == 65)
        #expect(FeedAPI.batches(in: [batch(64)], after: at62).batches.isEmpty, "a gap")
        #expect(FeedAPI.batches(in: [batch(63, "ffffffffffffffff")], after: at62).batches.isEmpty, "another history")
        #expect(FeedAPI.batches(in: [EventFields(type: "snapshot", id: nil, data: [])], after: at62) == ([], 62))
    }
}
