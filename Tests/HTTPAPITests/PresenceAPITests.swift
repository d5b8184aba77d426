import TestSupport
import ViewModelHosting
import DiffStreamJSON
import FeedCore
import HTTPAPI
import HTTPCore
import Presence
import Testing

/// Who is here through the API (issue 55), in memory: streams of a feed with presence make their users
/// present on its presence feed, which is read and followed with the feed's rights.
struct PresenceAPITests {
    typealias F = TokenFixtures
    let base = FeedStreamTests()

    func makeAPI(identities: Bool = false, verifier: Bool = true, privateReads: Bool = false, grace: Double = 0.05, maxFeeds: Int = 10_000) async throws -> FeedAPI {
        let registry = FeedRegistry(replayLimit: 8, transport: MemoryBroadcaster())
        var options = FeedAPI.Options()
        options.presence = identities ? FeedAPI.PresencePolicy(identities: [FeedPattern("board*")]) : FeedAPI.PresencePolicy(feeds: [FeedPattern("board*")])
        if verifier { options.verifier = try await JWTVerifier(hmacSecret: F.secret) }
        options.privateReads = privateReads
        options.now = { F.now }
        let presence = PresenceFeeds(transport: MemoryBroadcaster(), settings: PresenceTracker.Settings(interval: 0.01, grace: grace), maxFeeds: maxFeeds)
        let api = FeedAPI(registry: registry, hosted: nil, files: nil, options: options, serverMetrics: { nil }, presence: presence)
        let admin = try await F.hs256(F.claims(publish: ["*"]))
        _ = await base.put(api, "board", items: ["a"], headers: ["Host": "x", "Authorization": "Bearer " + admin])
        return api
    }

    func bearer(_ subject: String?, name: String? = nil, subscribe: [String] = ["*"]) async throws -> HTTPHeaders {
        ["Host": "x", "Authorization": "Bearer " + (try await F.hs256(F.claims(subscribe: subscribe, sub: subject, name: name)))]
    }

    /// The presence feed's document: its section's count and its items' models.
    func presence(_ api: FeedAPI, _ name: String = "_presence.board", headers: HTTPHeaders = ["Host": "x"]) async -> (count: Double?, items: [JSONValue]) {
        let response = await api.handle(HTTPRequest(method: "GET", target: "/feeds/" + name, headers: headers))
        guard case .bytes(let body) = response.body, let document = try? JSONParser.parse(body),
              let section = document["sections"]?.arrayValue?.first else { return (nil, []) }
        return (section["model"]?["count"]?.numberValue, section["items"]?.arrayValue?.compactMap { $0["model"] } ?? [])
    }

    /// Reads `watcher`'s events until the presence feed shows `count` users (false if it ends first).
    func awaitCount(_ api: FeedAPI, _ watcher: MemorySink, _ count: Double) async -> Bool {
        while await presence(api).count != count {
            guard await watcher.next() != nil else { return false }
        }
        return true
    }

    @Test func aStreamMakesItsUserPresentUntilTheGraceAfterItCloses() async throws {
        let api = try await makeAPI()
        let watcher = try await base.subscribe(api, "/feeds/_presence.board/events")
        #expect(await watcher.next()?.type == "snapshot")
        #expect(await presence(api).count == 0, "following presence makes no one present")
        let stream = try await base.subscribe(api, "/feeds/board/events")
        #expect(await awaitCount(api, watcher, 1))
        let item = await presence(api).items.first
        #expect(item?["connections"]?.numberValue == 1 && item?["name"] == nil)
        stream.close()
        #expect(await awaitCount(api, watcher, 0))
    }

    @Test func severalStreamsOfOneUserAreOneItemAndNamesShowWhereIdentitiesAre() async throws {
        let api = try await makeAPI(identities: true)
        let watcher = try await base.subscribe(api, "/feeds/_presence.board/events")
        let headers = try await bearer("alice@example.com", name: "Alice")
        let first = try await base.subscribe(api, "/feeds/board/events", headers: headers)
        let second = try await base.subscribe(api, "/events?feed=board", headers: headers)
        _ = try await base.subscribe(api, "/feeds/board/events", headers: try await bearer("bob@example.com"))
        #expect(await awaitCount(api, watcher, 2))
        #expect(await eventually { await presence(api).items.first?["connections"]?.numberValue == 2 })
        let items = await presence(api).items
        #expect(items.first?["name"] == "Alice" && items.first?["sub"] == "alice@example.com")
        #expect(items.last?["sub"] == "bob@example.com")
        first.close()
        second.close()
        #expect(await awaitCount(api, watcher, 1))
    }

    @Test func withoutIdentitiesATokensSubjectIsNeverShown() async throws {
        let api = try await makeAPI()
        let watcher = try await base.subscribe(api, "/feeds/_presence.board/events")
        _ = try await base.subscribe(api, "/feeds/board/events", headers: try await bearer("alice@example.com", name: "Alice"))
        #expect(await awaitCount(api, watcher, 1))
        let response = await api.handle(HTTPRequest(method: "GET", target: "/feeds/_presence.board", headers: ["Host": "x"]))
        guard case .bytes(let body) = response.body else { Issue.record("no body"); return }
        let text = String(decoding: body, as: UTF8.self)
        #expect(!text.contains("alice") && !text.contains("Alice"))
    }

    @Test func aReopenWithTheCarriedIDWithinTheGraceIsNoLeave() async throws {
        let api = try await makeAPI(grace: 30)
        let watcher = try await base.subscribe(api, "/feeds/_presence.board/events")
        let carried = "tab-0123456789abcdef"
        let first = try await base.subscribe(api, "/feeds/board/events?presence-id=\(carried)")
        #expect(await awaitCount(api, watcher, 1))
        let version = await presence(api).items.first?["since"]
        first.close()
        _ = try await base.subscribe(api, "/events?feed=board&presence-id=\(carried)")
        _ = try await base.subscribe(api, "/feeds/board/events?presence=hidden")
        #expect(await eventually { await presence(api).items.first?["connections"]?.numberValue == 1 })
        let after = await presence(api)
        #expect(after.count == 1 && after.items.first?["since"] == version)
    }

    @Test func theMultiFeedStreamCarriesThePresenceFeedAndItsOwnUserIsPresent() async throws {
        let api = try await makeAPI()
        let meta = "%7B%22device%22%3A%22phone%22%7D"  // {"device":"phone"}
        let stream = try await base.subscribe(api, "/events?feed=board&feed=_presence.board&presence-meta=\(meta)")
        var sawPresence = false
        while !sawPresence, let event = await stream.next() {
            sawPresence = event.json?["feed"] == "_presence.board" && event.json?["sections"]?.arrayValue?.first?["model"]?["count"]?.numberValue == 1
                || event.json?["feed"] == "_presence.board" && event.type == "batch"
        }
        #expect(await presence(api).items.first?["metas"] == .array([.object(JSONObject([("device", .string("phone"))]))]))
    }

    @Test func readingPresenceNeedsTheRightToReadTheFeed() async throws {
        let api = try await makeAPI(privateReads: true)
        let reader = try await bearer("alice", subscribe: ["board"])
        let stream = try await base.subscribe(api, "/feeds/board/events", headers: reader)
        #expect(await stream.next()?.type == "snapshot")
        let outsider = try await bearer("eve", subscribe: ["other"])
        for target in ["/feeds/_presence.board", "/feeds/_presence.board/events", "/events?feed=_presence.board"] {
            #expect(await api.handle(HTTPRequest(method: "GET", target: target, headers: outsider)).status == .forbidden, "\(target)")
            #expect(await api.handle(HTTPRequest(method: "GET", target: target, headers: ["Host": "x"])).status == .unauthorized, "\(target)")
        }
        let insider = try await bearer("bob", subscribe: ["board"])
        #expect(await presence(api, headers: insider).count != nil)
    }

    @Test func aPresenceFeedIsReadOnlyAndOnlyForFeedsWithPresence() async throws {
        let api = try await makeAPI()
        let put = await api.handle(HTTPRequest(method: "PUT", target: "/feeds/_presence.board", headers: ["Host": "x"], body: Array(#"{"sections":[]}"#.utf8)))
        #expect(put.status == .methodNotAllowed && put.headers["Allow"] == "GET, HEAD")
        #expect(await api.handle(HTTPRequest(method: "GET", target: "/feeds/_presence.news", headers: ["Host": "x"])).status == .notFound)
        #expect(await api.handle(HTTPRequest(method: "GET", target: "/feeds/_presence-0123", headers: ["Host": "x"])).status == .notFound)
        #expect(await api.handle(HTTPRequest(method: "PUT", target: "/feeds/_presence.news", headers: ["Host": "x"], body: Array(#"{"sections":[]}"#.utf8))).status == .notFound)
    }

    @Test func theFeedsListAndTheStreamNameThePresenceFeed() async throws {
        let api = try await makeAPI()
        let list = await api.handle(HTTPRequest(method: "GET", target: "/feeds", headers: ["Host": "x"]))
        guard case .bytes(let body) = list.body, let feeds = try JSONParser.parse(body).arrayValue else { Issue.record("no list"); return }
        #expect(feeds.first { $0["feed"] == "board" }?["presence"] == "_presence.board")
        #expect(!feeds.contains { $0["feed"]?.stringValue?.hasPrefix("_presence") == true }, "not a feed of its own")
        let stream = await api.handle(HTTPRequest(method: "GET", target: "/feeds/board/events", headers: ["Host": "x"]))
        #expect(stream.headers["DiffStream-Presence"] == "_presence.board")
    }

    @Test func aHostedViewModelMayAskForPresenceWithIdentities() async throws {
        let registry = FeedRegistry(replayLimit: 8, transport: MemoryBroadcaster())
        let hosted = HostedFeeds(registry: registry)
        try await hosted.host(Counter(presence: .identities), as: "counter")
        var options = FeedAPI.Options()
        options.verifier = try await JWTVerifier(hmacSecret: F.secret)
        options.now = { F.now }
        let feeds = PresenceFeeds(transport: MemoryBroadcaster(), settings: PresenceTracker.Settings(interval: 0.01, grace: 0))
        let api = FeedAPI(registry: registry, hosted: hosted, files: nil, options: options, serverMetrics: { nil }, presence: feeds)
        let watcher = try await base.subscribe(api, "/feeds/_presence.counter/events")
        _ = try await base.subscribe(api, "/feeds/counter/events", headers: try await bearer("alice@example.com", name: "Alice"))
        while await presence(api, "_presence.counter").count != 1 { guard await watcher.next() != nil else { break } }
        #expect(await presence(api, "_presence.counter").items.first?["name"] == "Alice")
        #expect(await api.handle(HTTPRequest(method: "GET", target: "/feeds/_presence.board", headers: ["Host": "x"])).status == .notFound, "no flag, no presence")
    }

    @Test(arguments: ["presence-meta=%5B1%5D", "presence-meta=%7B", "presence-meta=%7B%22a%22%3A%22\(String(repeating: "x", count: 130))%22%7D", "presence-id=short"])
    func malformedPresenceParametersAreRefused(query: String) async throws {
        let api = try await makeAPI()
        #expect(await api.handle(HTTPRequest(method: "GET", target: "/feeds/board/events?" + query, headers: ["Host": "x"])).status == .badRequest)
    }
}

extension PresenceAPITests {
    /// `--max-presence-feeds` at the edge: past it, a presence feed not held is `503` naming the limit,
    /// with `Retry-After` (its document and its stream), and the one held is served as before.
    @Test func pastTheCapAPresenceFeedNotHeldIs503NamingTheLimit() async throws {
        let api = try await makeAPI(maxFeeds: 1)
        let admin = try await F.hs256(F.claims(publish: ["*"]))
        _ = await base.put(api, "board2", items: ["b"], headers: ["Host": "x", "Authorization": "Bearer " + admin])
        let watcher = try await base.subscribe(api, "/feeds/_presence.board/events")
        #expect(await watcher.next()?.type == "snapshot")
        for target in ["/feeds/_presence.board2", "/feeds/_presence.board2/events"] {
            let response = await api.handle(HTTPRequest(method: "GET", target: target, headers: ["Host": "x"]))
            #expect(response.status == .serviceUnavailable, "\(target)")
            #expect(response.headers["Retry-After"] == "5")
            guard case .bytes(let body) = response.body, let error = try? JSONParser.parse(body) else {
                Issue.record("no JSON body for \(target)")
                continue
            }
            #expect(error["error"] == "presence feeds full" && error["limit"] == "max-presence-feeds" && error["value"]?.numberValue == 1)
        }
        #expect(await presence(api).count == 0, "the presence feed held is served as before")
        watcher.close()
    }
}

