import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import EpollRuntime
import HTTPCore
import Testing

/// The API without sockets: requests in, responses out.
struct FeedAPITests {
    @Test(arguments: [("/feeds/a", ["feeds", "a"]), ("/", [""]), ("/feeds//x", ["feeds", "", "x"]), ("/feeds/a%2Fb/events", ["feeds", "a/b", "events"]),
                      ("/feeds/%E2%82%AC/", ["feeds", "€", ""]), ("/π/x", ["π", "x"]), ("*", []), ("/feeds/bad%zz", ["feeds", "bad%zz"]),
                      ("/feeds/a?x=/y", ["feeds", "a"])])
    func pathsSplitIntoDecodedSegments(target: String, segments: [String]) {
        #expect(FeedAPI.segments(of: HTTPRequest(method: "GET", target: target)) == segments)
    }

    func makeAPI(token: String? = nil) async throws -> FeedAPI {
        let registry = FeedRegistry(replayLimit: 8)
        let hosted = HostedFeeds(registry: registry)
        try await hosted.host(Counter(), as: "counter")
        return FeedAPI(registry: registry, hosted: hosted, files: nil, options: .init(token: token), serverMetrics: { nil })
    }

    func request(_ method: String, _ target: String, body: String = "", headers: HTTPHeaders = ["Host": "x"]) -> HTTPRequest {
        HTTPRequest(method: method, target: target, headers: headers, body: Array(body.utf8))
    }

    func json(_ response: HTTPResponse) throws -> JSONValue {
        guard case .bytes(let bytes) = response.body else { throw APIError(.internalServerError, "stream", "not a body") }
        return try JSONParser.parse(bytes)
    }

    @Test func putCreatesThenReplacesWithVersionsAndOpCounts() async throws {
        let api = try await makeAPI()
        let first = await api.handle(request("PUT", "/feeds/list", body: #"{"sections":[{"id":"a","model":null,"items":[{"id":"1","kind":"k","model":{"x":1,"y":2}}]}]}"#))
        #expect(first.status == .created)
        #expect(try json(first) == ["feed": "list", "version": 1, "ops": 2])
        let same = await api.handle(request("PUT", "/feeds/list", body: #"{"sections":[{"id":"a","model":null,"items":[{"id":"1","kind":"k","model":{"y":2,"x":1}}]}]}"#))
        #expect(same.status == .ok)
        #expect(try json(same) == ["feed": "list", "version": 1, "ops": 0])
        let changed = await api.handle(request("PUT", "/feeds/list", body: #"{"sections":[{"id":"a","model":null,"items":[{"id":"2","kind":"k","model":null},{"id":"1","kind":"k","model":{"x":1,"y":3}}]}]}"#))
        #expect(try json(changed) == ["feed": "list", "version": 2, "ops": 2])
        let document = try json(await api.handle(request("GET", "/feeds/list")))
        #expect(document["version"] == 2)
        #expect(document["sections"]?.arrayValue?.first?["items"]?.arrayValue?.count == 2)
    }

    /// Models are kept exactly: a 20-digit integer comes back as sent, a change beyond Double
    /// precision is an operation, and any number the grammar allows is accepted (issue 9).
    @Test func modelsAreExact() async throws {
        let api = try await makeAPI()
        func body(_ n: String) -> String { #"{"sections":[{"id":"a","model":{"big":12345678901234567890},"items":[{"id":"1","kind":"k","model":{"n":"# + n + "}}]}]}" }
        #expect(await api.handle(request("PUT", "/feeds/exact", body: body("9007199254740992"))).status == .created)
        #expect(try json(await api.handle(request("PUT", "/feeds/exact", body: body("9007199254740993"))))["ops"] == 1)
        #expect(try json(await api.handle(request("PUT", "/feeds/exact", body: body("9007199254740993.000"))))["ops"] == 0)
        #expect(try json(await api.handle(request("PUT", "/feeds/exact", body: body("1e400"))))["ops"] == 1)
        guard case .bytes(let document) = await api.handle(request("GET", "/feeds/exact")).body else { throw APIError(.internalServerError, "stream", "not a body") }
        let text = String(decoding: document, as: UTF8.self)
        #expect(text.contains(#""model":{"big":12345678901234567890}"#) && text.contains(#""model":{"n":1e+400}"#), "\(text)")
    }

    @Test(arguments: [
        ("{", 400, "invalid JSON at byte"),
        (#"{"sections":[{"id":"a","items":[{"id":"1","kind":"k"},{"id":"1","kind":"k"}]}]}"#, 422, "'1'"),
        (#"{"sections":[{"id":"","items":[]}]}"#, 422, "sections[0].id"),
        (#"{"sections":[{"id":"a"},{"id":"a"}]}"#, 422, "'a'"),
        (#"{"sections":{}}"#, 422, "sections"),
        (#"{"sections":[{"id":"a","items":[{"id":"1"}]}]}"#, 422, "kind"),
    ])
    func badSnapshotsAreRefusedAndChangeNothing(body: String, status: Int, mention: String) async throws {
        let api = try await makeAPI()
        _ = await api.handle(request("PUT", "/feeds/list", body: #"{"sections":[]}"#))
        let response = await api.handle(request("PUT", "/feeds/list", body: body))
        #expect(response.status.code == status)
        let error = try json(response)
        #expect(error["detail"]?.stringValue?.contains(mention) == true, "\(error)")
        #expect(try json(await api.handle(request("GET", "/feeds/list")))["version"] == 1)
    }

    @Test func writesNeedTheTokenWhenOneIsSet() async throws {
        let api = try await makeAPI(token: "s3cret-token")
        let denied = await api.handle(request("PUT", "/feeds/x", body: #"{"sections":[]}"#))
        #expect(denied.status == .unauthorized)
        #expect(denied.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true)
        let wrong = await api.handle(request("PATCH", "/feeds/counter", body: "{}", headers: ["Host": "x", "Authorization": "Bearer nope"]))
        #expect(wrong.status == .unauthorized)
        let allowed = await api.handle(request("PUT", "/feeds/x", body: #"{"sections":[]}"#, headers: ["Host": "x", "Authorization": "Bearer s3cret-token"]))
        #expect(allowed.status == .created)
        #expect(await api.handle(request("GET", "/feeds/x")).status == .ok)
    }

    @Test func methodsAndRoutes() async throws {
        let api = try await makeAPI()
        let notAllowed = await api.handle(request("DELETE", "/healthz"))
        #expect(notAllowed.status == .methodNotAllowed)
        #expect(notAllowed.headers["Allow"] == "GET, HEAD")
        #expect(await api.handle(request("BREW", "/")).status == .notImplemented)
        #expect(await api.handle(request("GET", "/feeds/.hidden")).status == .notFound)
        #expect(await api.handle(request("GET", "/feeds/nope")).status == .notFound)
        #expect(await api.handle(request("GET", "/feeds/nope/events")).status == .notFound)
        #expect(await api.handle(request("PUT", "/feeds/counter", body: #"{"sections":[]}"#)).status.code == 409)
        #expect(await api.handle(request("DELETE", "/feeds/counter")).status.code == 409)
        #expect(await api.handle(request("PATCH", "/feeds/plain")).status == .notFound)  // no such feed
        _ = await api.handle(request("PUT", "/feeds/plain", body: #"{"sections":[]}"#))
        #expect(await api.handle(request("PATCH", "/feeds/plain")).status == .methodNotAllowed)
        // The path is split before it is decoded: an encoded slash is part of a name.
        _ = await api.handle(request("PUT", "/feeds/news", body: #"{"sections":[]}"#))
        #expect(await api.handle(request("GET", "/feeds/news%2Fevents")).status == .notFound)
        #expect(await api.handle(request("GET", "/feeds/n%65ws")).status == .ok)
        #expect(await api.handle(request("GET", "/feeds/%6Eews/events")).status == .ok)
        #expect(await api.handle(request("GET", "/nothing-here")).status == .notFound)
    }

    @Test func feedsAreListedAndDeleted() async throws {
        let api = try await makeAPI()
        _ = await api.handle(request("PUT", "/feeds/zeta", body: #"{"sections":[]}"#))
        let list = try json(await api.handle(request("GET", "/feeds")))
        #expect(list.arrayValue?.compactMap { $0["feed"]?.stringValue } == ["counter", "zeta"])
        #expect(await api.handle(request("DELETE", "/feeds/zeta")).status == .noContent)
        #expect(await api.handle(request("DELETE", "/feeds/zeta")).status == .notFound)
    }

    @Test func actionsPublishBatches() async throws {
        let api = try await makeAPI()
        let increment = try json(await api.handle(request("POST", "/feeds/counter/actions/increment")))
        #expect(increment == ["feed": "counter", "version": 2, "ops": 1])
        let add = await api.handle(request("POST", "/feeds/counter/actions/add", body: #"{"amount":3}"#))
        #expect(try json(add) == ["feed": "counter", "version": 3, "ops": 1])
        #expect(await api.handle(request("POST", "/feeds/counter/actions/add", body: #"{"amount":"x"}"#)).status == .unprocessableContent)
        #expect(await api.handle(request("GET", "/feeds/counter/actions/add")).status == .methodNotAllowed)
        #expect(await api.handle(request("POST", "/feeds/nope/actions/add")).status == .notFound)
        let patch = try json(await api.handle(request("PATCH", "/feeds/counter", body: #"{"label":"x"}"#)))
        #expect(patch["ops"] == 1)
    }

    @Test func aWritePastAStorageLimitIs507NamingItAndChangesNothing() async throws {
        let registry = FeedRegistry(replayLimit: 8, storage: StorageAccount(limits: StorageLimits(maxFeeds: 1, maxFeedBytes: 64, maxStoreBytes: 1 << 20)))
        let api = FeedAPI(registry: registry, hosted: nil, files: nil, options: .init(), serverMetrics: { nil })
        #expect(await api.handle(request("PUT", "/feeds/a", body: #"{"sections":[]}"#)).status == .created)
        let tooMany = await api.handle(request("PUT", "/feeds/b", body: #"{"sections":[]}"#))
        #expect(tooMany.status.code == 507)
        let body = try json(tooMany)
        #expect(body["limit"] == "max-feeds" && body["value"] == 1, "\(body)")
        let tooBig = await api.handle(request("PUT", "/feeds/a", body: #"{"sections":[{"id":"a-section-with-a-long-name","model":"and a long model"}]}"#))
        #expect(try json(tooBig)["limit"] == "max-feed-bytes")
        #expect(try json(await api.handle(request("GET", "/feeds/a")))["sections"] == [])
        #expect(await api.handle(request("GET", "/feeds/b")).status == .notFound)
        #expect(await api.handle(request("DELETE", "/feeds/a")).status == .noContent)
        #expect(await api.handle(request("PUT", "/feeds/b", body: #"{"sections":[]}"#)).status == .created)
    }

    @Test func privateReadsAreAuthorizedBeforeTheFeedIsLookedUp() async throws {
        let registry = FeedRegistry(replayLimit: 8)
        var options = FeedAPI.Options()
        options.verifier = try await JWTVerifier(hmacSecret: TokenFixtures.secret)
        options.privateReads = true
        options.now = { TokenFixtures.now }
        let api = FeedAPI(registry: registry, hosted: nil, files: nil, options: options, serverMetrics: { nil })
        let writer = try await TokenFixtures.hs256(TokenFixtures.claims(subscribe: ["mine"], publish: ["mine", "theirs"]))
        let auth: HTTPHeaders = ["Host": "x", "Authorization": "Bearer \(writer)"]
        #expect(await api.handle(request("PUT", "/feeds/mine", body: #"{"sections":[]}"#, headers: auth)).status == .created)
        #expect(await api.handle(request("PUT", "/feeds/theirs", body: #"{"sections":[]}"#, headers: auth)).status == .created)
        #expect(await api.handle(request("GET", "/feeds/mine", headers: auth)).status == .ok)
        #expect(await api.handle(request("GET", "/feeds/theirs", headers: auth)).status == .forbidden)
        #expect(await api.handle(request("GET", "/feeds/missing", headers: auth)).status == .forbidden)
        #expect(await api.handle(request("GET", "/feeds/missing/events", headers: auth)).status == .forbidden)
        #expect(await api.handle(request("GET", "/feeds/mine")).status == .unauthorized)
        #expect(try json(await api.handle(request("GET", "/feeds", headers: auth))).arrayValue?.compactMap { $0["feed"]?.stringValue } == ["mine"])
        let expired = try await TokenFixtures.hs256(TokenFixtures.claims(subscribe: ["mine"], exp: TokenFixtures.now - 600))
        let refused = await api.handle(request("GET", "/feeds/mine", headers: ["Host": "x", "Authorization": "Bearer \(expired)"]))
        #expect(refused.status == .unauthorized)
        #expect(refused.headers["WWW-Authenticate"] == #"Bearer realm="diffstream", error="invalid_token""#)
        #expect(try json(refused)["detail"]?.stringValue?.contains("expired") == true)
    }

    @Test func constantTimeComparisonOnlyAcceptsTheExactToken() async throws {
        let api = try await makeAPI(token: "abcdefgh")
        for given in ["abcdefg", "abcdefghi", "Abcdefgh", "", "abcdefgh "] {
            let response = await api.handle(request("DELETE", "/feeds/x", headers: ["Host": "x", "Authorization": "Bearer \(given)"]))
            #expect(response.status == .unauthorized, "token '\(given)'")
        }
    }
}
