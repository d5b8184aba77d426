import DiffStream
import DiffStreamJSON
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
import TestSupport
@testable import DiffStreamClient

struct TodoSection: Identifiable, Hashable, Decodable, Sendable {
    var id: String
    var model: Title
    struct Title: Hashable, Decodable, Sendable { var title: String }
}

struct TodoItem: Identifiable, Hashable, Decodable, Sendable {
    var id: String
    var kind: String
    var model: Model
    struct Model: Hashable, Decodable, Sendable { var title: String; var done: Bool }
}

struct Add: Encodable, Sendable { var title: String }
struct Toggle: Encodable, Sendable { var id: String }

func isUpdate<S, I>(_ event: FeedEvent<S, I>) -> FeedUpdate<S, I>? {
    if case .update(let update) = event { update } else { nil }
}

/// The client against the real built server (started on port 0; see LiveServer).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct FeedClientLiveTests {
    static let admin = "admin-token-of-the-client-tests"

    @Test func typedFeedActionsAndATypedRefusal() async throws {
        let server = try LiveServer(["--examples", "todo"])
        let client = FeedClient(baseURL: server.url)
        var events = client.snapshots(of: "todo", as: Snapshot<TodoSection, TodoItem>.self).makeAsyncIterator()
        let first = try await events.next(where: isUpdate)
        #expect(first.change == .full(.first))
        #expect(first.snapshot.sectionIDs == ["todo", "done"])
        #expect(first.snapshot.section(withID: "todo")?.model.title == "To do")

        let added = try await client.perform("add", on: "todo", input: Add(title: "milk"))
        #expect(added.version == first.version + 1)
        let batch = try await events.next(where: isUpdate)
        #expect(batch.change == .batch)
        #expect(batch.version == added.version)
        let inserted = batch.operations.compactMap { if case .insert(let item, _, _) = $0 { item } else { nil } }
        #expect(inserted.map(\.model.title) == ["milk"])

        try await client.perform("toggle", on: "todo", input: Toggle(id: inserted[0].id))
        let toggled = try await events.next(where: isUpdate)
        #expect(toggled.changedItemIDs == [inserted[0].id])
        #expect(toggled.snapshot.section(containingItem: inserted[0].id)?.id == "done")

        // 422: a typed error naming the field.
        await #expect {
            try await client.perform("add", on: "todo", input: Add(title: ""))
        } throws: { error in
            guard case ActionError.invalidInput(let field, _, let problem) = error else { return false }
            return field == "title" && problem.status == 422
        }
        await #expect(throws: ActionError.self) { try await client.perform("nothing", on: "todo") }
        server.stop()
    }

    /// Issue 38: a family member (`home.alice`, made by the family's loader on first use) is followed
    /// like any feed, with the app's own types: its first snapshot, then a `PATCH` as one batch.
    @Test func aFamilyMemberIsFollowedUnchanged() async throws {
        struct HomeSection: Identifiable, Hashable, Decodable, Sendable {
            var id: String
            var model: Header?
            struct Header: Hashable, Decodable, Sendable { var title: String? }
        }
        struct HomeItem: Identifiable, Hashable, Decodable, Sendable {
            var id: String
            var kind: String
            var model: Model
            struct Model: Hashable, Decodable, Sendable { var title: String? }
        }
        let server = try LiveServer(["--examples", "home"])
        let client = FeedClient(baseURL: server.url)
        var events = client.snapshots(of: "home.alice", as: Snapshot<HomeSection, HomeItem>.self).makeAsyncIterator()
        let first = try await events.next(where: isUpdate)
        #expect(first.feed == "home.alice")
        #expect(first.change == .full(.first))
        #expect(first.snapshot.item(withID: "banner-welcome-alice")?.model.title == "Welcome back, Alice")
        #expect(first.snapshot.section(withID: "recommended")?.model?.title == "Recommended for Alice")

        let (status, _) = try await server.request("PATCH", "/feeds/home.alice", body: #"{"recommendedHeader":{"title":"Just for Alice"}}"#)
        #expect(status == 200)
        let batch = try await events.next(where: isUpdate)
        #expect(batch.change == .batch)
        #expect(batch.history == first.history)
        #expect(batch.version == first.version + 1)
        #expect(batch.snapshot.section(withID: "recommended")?.model?.title == "Just for Alice")
        #expect(batch.snapshot.item(withID: "banner-welcome-alice")?.model.title == "Welcome back, Alice")
        server.stop()
    }

    @Test func droppedConnectionResumesWithoutASnapshot() async throws {
        let data = LiveServer.temporaryDirectory("data")
        var server = try LiveServer(["--data", data.path])
        let port = server.port
        _ = try await server.request("PUT", "/feeds/news", body: #"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":1}]}]}"#)
        var events = FeedClient(baseURL: server.url).updates(of: "news").makeAsyncIterator()
        let first = try await events.next(where: isUpdate)
        #expect(first.change == .full(.first))
        server.kill9()
        server = try LiveServer(["--data", data.path], port: port)
        _ = try await server.request("PUT", "/feeds/news", body: #"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":2}]}]}"#)
        var sawDisconnect = false
        let next = try await events.next { event -> WireFeedUpdate? in
            if case .connection(.disconnected) = event { sawDisconnect = true }
            return isUpdate(event)
        }
        #expect(sawDisconnect)
        #expect(next.change == .batch)  // resumed from its id: only the missed batch, no snapshot
        #expect(next.history == first.history)
        #expect(next.version == first.version + 1)
        #expect(next.changedItemIDs == ["a"])
        server.stop()
    }

    @Test func manyFeedsOnOneStream() async throws {
        let server = try LiveServer([])
        _ = try await server.request("PUT", "/feeds/one", body: #"{"sections":[{"id":"s","items":[]}]}"#)
        _ = try await server.request("PUT", "/feeds/two", body: #"{"sections":[]}"#)
        var events = FeedClient(baseURL: server.url).updates(of: ["one", "two", "three"]).makeAsyncIterator()
        var first: [String: WireFeedUpdate] = [:]
        var missing: FeedProblem?
        while first.count < 2 || missing == nil {
            switch try await events.next() {
            case .update(let update)?: first[update.feed] = update
            case .notFound(let problem)?: missing = problem
            case nil: Issue.record("the stream ended"); return
            default: break
            }
        }
        #expect(first["one"]?.change == .full(.first))
        #expect(first["two"]?.change == .full(.first))
        #expect(missing?.feed == "three")
        _ = try await server.request("PUT", "/feeds/two", body: #"{"sections":[{"id":"t","items":[]}]}"#)
        let batch = try await events.next(where: isUpdate)
        #expect(batch.feed == "two")
        #expect(batch.change == .batch)
        #expect(batch.eventID.hasPrefix("two@") == false)  // the feed's own id, as on the single-feed route
        // The feed that was not found is retried with backoff; the others resume from their positions.
        _ = try await server.request("PUT", "/feeds/three", body: #"{"sections":[]}"#)
        let appeared = try await events.next { event -> WireFeedUpdate? in
            guard let update = isUpdate(event) else { return nil }
            #expect(update.feed == "three", "no feed is sent twice")
            return update
        }
        #expect(appeared.change == .full(.first))
        server.stop()
    }

    /// More feeds than one stream may list: one stream per `maxStreamFeeds`, merged into one sequence.
    @Test func moreFeedsThanOneStreamTakesAreSplitOverStreams() async throws {
        let server = try LiveServer(["--max-stream-feeds", "2"])
        let names = (1...5).map { "f\($0)" }
        for name in names { _ = try await server.request("PUT", "/feeds/\(name)", body: #"{"sections":[]}"#) }
        var client = FeedClient(baseURL: server.url)
        client.maxStreamFeeds = 2
        var events = client.updates(of: names).makeAsyncIterator()
        var first: Set<String> = []
        while first.count < names.count {
            let update = try await events.next(where: isUpdate)
            #expect(update.change == .full(.first), "\(update.feed) twice")
            first.insert(update.feed)
        }
        _ = try await server.request("PUT", "/feeds/f5", body: #"{"sections":[{"id":"s","items":[]}]}"#)
        let batch = try await events.next(where: isUpdate)
        #expect(batch.feed == "f5" && batch.change == .batch)
        server.stop()
    }

    @Test func stalledStreamIsDetected() async throws {
        let server = try LiveServer(["--heartbeat", "1"])
        _ = try await server.request("PUT", "/feeds/news", body: #"{"sections":[]}"#)
        // The interval is the one the server announces (`: heartbeat 1`), not the 15 s assumed before.
        var events = FeedClient(baseURL: server.url).updates(of: "news").makeAsyncIterator()
        _ = try await events.next(where: isUpdate)
        server.signal(SIGSTOP)  // no more heartbeats, the connection stays open
        let silence = try await events.next { event -> Double? in
            if case .connection(.stalled(let silence)) = event { silence } else { nil }
        }
        #expect(silence >= 2.5)
        server.signal(SIGCONT)
        let again = try await events.next { event -> Bool? in
            if case .connection(.connected) = event { true } else { nil }
        }
        #expect(again)
        server.stop()
    }

    @Test func refusalsAreTypedEvents() async throws {
        let directory = LiveServer.temporaryDirectory("jwt")
        let secret = directory.appendingPathComponent("jwt.secret").path
        try "client-tests-secret-of-at-least-thirty-two-bytes\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let server = try LiveServer(["--jwt-secret-file", secret, "--private", "--token", Self.admin])
        _ = try await server.request("PUT", "/feeds/mine", body: #"{"sections":[]}"#, token: Self.admin)

        var anonymous = FeedClient(baseURL: server.url).updates(of: "mine").makeAsyncIterator()
        let unauthorized = try await anonymous.next { event -> FeedProblem? in if case .unauthorized(let p) = event { p } else { nil } }
        #expect(unauthorized.status == 401)
        #expect(try await anonymous.next() == nil)  // no token hook: it stops following

        let other = try LiveServer.token(secretFile: secret, subscribe: ["other-*"], lifetime: 600)
        var forbidden = FeedClient(baseURL: server.url, token: other).updates(of: "mine").makeAsyncIterator()
        let refused = try await forbidden.next { event -> FeedProblem? in if case .forbidden(let p) = event { p } else { nil } }
        #expect(refused.status == 403)

        let reader = try LiveServer.token(secretFile: secret, subscribe: ["*"], lifetime: 600)
        var missing = FeedClient(baseURL: server.url, token: reader).updates(of: "absent").makeAsyncIterator()
        let notFound = try await missing.next { event -> FeedProblem? in if case .notFound(let p) = event { p } else { nil } }
        #expect(notFound.status == 404)
        // Retried with backoff: once the feed exists, its snapshot follows.
        _ = try await server.request("PUT", "/feeds/absent", body: #"{"sections":[]}"#, token: Self.admin)
        let appeared = try await missing.next(where: isUpdate)
        #expect(appeared.change == .full(.first))
        server.stop()
    }

    @Test func expiredTokenThenAFreshOneFromTheHook() async throws {
        let directory = LiveServer.temporaryDirectory("jwt")
        let secret = directory.appendingPathComponent("jwt.secret").path
        try "client-tests-secret-of-at-least-thirty-two-bytes\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let server = try LiveServer(["--jwt-secret-file", secret, "--private", "--token", Self.admin])
        _ = try await server.request("PUT", "/feeds/mine", body: #"{"sections":[]}"#, token: Self.admin)
        let short = try LiveServer.token(secretFile: secret, subscribe: ["mine"], lifetime: 1)
        let fresh = try LiveServer.token(secretFile: secret, subscribe: ["mine"], lifetime: 600)
        let client = FeedClient(baseURL: server.url, token: short) { _ in fresh }
        var events = client.updates(of: "mine").makeAsyncIterator()
        let first = try await events.next(where: isUpdate)
        // The server ends the stream at exp plus its 5 s leeway with `event: unauthorized`.
        let expired = try await events.next { event -> FeedProblem? in if case .unauthorized(let p) = event { p } else { nil } }
        #expect(expired.error == "token expired")
        _ = try await events.next { event -> Bool? in if case .connection(.connected) = event { true } else { nil } }
        _ = try await server.request("PUT", "/feeds/mine", body: #"{"sections":[{"id":"s","items":[]}]}"#, token: Self.admin)
        let resumed = try await events.next(where: isUpdate)
        #expect(resumed.change == .batch)
        #expect(resumed.version == first.version + 1)
        server.stop()
    }

    @Test func offlineCacheYieldsTheCachedSnapshotThenResumesFromItsId() async throws {
        let data = LiveServer.temporaryDirectory("data")
        let cache = LiveServer.temporaryDirectory("cache")
        var server = try LiveServer(["--data", data.path])
        let port = server.port
        let url = server.url
        _ = try await server.request("PUT", "/feeds/news", body: #"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"n":1}}]}]}"#)
        do {
            var events = FeedClient(baseURL: url, cacheDirectory: cache).updates(of: "news").makeAsyncIterator()
            _ = try await events.next(where: isUpdate)
        }
        server.kill9()
        // The server is down: the cached snapshot comes at once, marked stale.
        var client = FeedClient(baseURL: url, cacheDirectory: cache)
        client.maximumBackoff = 2
        var events = client.updates(of: "news").makeAsyncIterator()
        let cached = try await events.next(where: isUpdate)
        #expect(cached.isStale)
        #expect(cached.change == .full(.cached))
        #expect(String(decoding: WireCodec.encode(cached.snapshot), as: UTF8.self) == #"{"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"k","model":{"n":1}}]}]}"#)
        _ = try await events.next { event -> Bool? in if case .connection(.disconnected) = event { true } else { nil } }
        server = try LiveServer(["--data", data.path], port: port)
        _ = try await server.request("PUT", "/feeds/news", body: #"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"n":2}}]}]}"#)
        let resumed = try await events.next(where: isUpdate)
        #expect(resumed.change == .batch)  // from the cached id: the missed batch only
        #expect(resumed.version == cached.version + 1)
        server.stop()
    }
}

/// The property test of issue 25: the client follows a feed through random PUTs with kill -9 restarts
/// of the server on its --data, and one restart on an empty directory (a new history).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct FeedClientPropertyTests {
    static func randomDocument(_ random: inout SeededGenerator, tag: Int) -> String {
        var used = Set<Int>()
        var sections: [String] = []
        for section in ["a", "b", "c", "d"].shuffled(using: &random).prefix(Int.random(in: 1...4, using: &random)) {
            var items: [String] = []
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                let n = Int.random(in: 0..<30, using: &random)
                guard used.insert(n).inserted else { continue }
                let kind = Bool.random(using: &random) ? "k" : "j"
                items.append(#"{"id":"i\#(n)","kind":"\#(kind)","model":{"n":\#(Int.random(in: 0...3, using: &random)),"t":\#(tag)}}"#)
            }
            let model = Bool.random(using: &random) ? "null" : #"{"title":"\#(section.uppercased())"}"#
            sections.append(#"{"id":"\#(section)","model":\#(model),"items":[\#(items.joined(separator: ","))]}"#)
        }
        return #"{"sections":[\#(sections.joined(separator: ","))]}"#
    }

    /// The update's history; from its id with a server that does not send `history` (the test may read
    /// ids; clients never do).
    static func history(of update: WireFeedUpdate) -> String {
        update.history ?? update.eventID.split(separator: ".").dropLast().joined(separator: ".")
    }

    @Test func followsThroughRandomPutsRestartsAndANewHistory() async throws {
        var random = SeededGenerator(seed: 25)
        var data = LiveServer.temporaryDirectory("property")
        var server = try LiveServer(["--data", data.path])
        let port = server.port
        _ = try await server.request("PUT", "/feeds/prop", body: Self.randomDocument(&random, tag: -1))
        var client = FeedClient(baseURL: server.url)
        client.maximumBackoff = 2
        var events = client.updates(of: "prop").makeAsyncIterator()
        var updates: [WireFeedUpdate] = [try await events.next(where: isUpdate)]
        var resyncs: [String] = []
        var restarts = Set<Int>()
        while restarts.count < 6 { restarts.insert(Int.random(in: 10..<290, using: &random)) }
        let emptyAt = restarts.sorted()[3]
        for n in 0..<300 {
            if restarts.contains(n) {
                server.kill9()
                if n == emptyAt { data = LiveServer.temporaryDirectory("property-empty") }
                server = try LiveServer(["--data", data.path], port: port)
            }
            let (status, _) = try await server.request("PUT", "/feeds/prop", body: Self.randomDocument(&random, tag: n))
            #expect(status == 200 || status == 201)
        }
        let (_, body) = try await server.request("GET", "/feeds/prop")
        let expected = try JSONParser.parse(body)
        let finalVersion = Int(expected["version"]!.numberValue!)
        // Follow until the client holds the server's last version in the new history.
        while true {
            let update = try await events.next { event -> WireFeedUpdate? in
                if case .resyncing(_, let reason) = event { resyncs.append(reason) }
                return isUpdate(event)
            }
            updates.append(update)
            if update.version == finalVersion, Self.history(of: update) != Self.history(of: updates[0]) { break }
        }
        #expect(WireCodec.encode(updates.last!.snapshot) == WireCodec.encode(try WireCodec.decodeSnapshot(Array(body.utf8))))
        var last: [String: Int] = [:]
        var previousHistory: String?
        for update in updates {
            let history = Self.history(of: update)
            if let held = last[history] { #expect(update.version > held, "versions only move forward within a history") }
            last[history] = update.version
            if history != previousHistory { #expect(update.isFull, "a new history is announced with a snapshot") }
            previousHistory = history
        }
        #expect(last.count == 2)
        #expect(resyncs == [], "every batch of the server applies")
        server.stop()
    }
}
