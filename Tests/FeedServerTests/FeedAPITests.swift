import DiffStreamJSON
import FeedServer
import HTTPServer
import Testing

/// The API without sockets: requests in, responses out.
struct FeedAPITests {
    func makeAPI(token: String? = nil) async throws -> FeedAPI {
        let registry = FeedRegistry(replayLimit: 8, server: nil)
        let viewModels = ViewModelFeeds(registry: registry)
        try await viewModels.publishAll()
        return FeedAPI(registry: registry, viewModels: viewModels, files: nil, options: .init(token: token), serverMetrics: { nil })
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
        let wrong = await api.handle(request("PATCH", "/feeds/home", body: "{}", headers: ["Host": "x", "Authorization": "Bearer nope"]))
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
        #expect(await api.handle(request("PUT", "/feeds/home", body: #"{"sections":[]}"#)).status.code == 409)
        #expect(await api.handle(request("DELETE", "/feeds/week")).status.code == 409)
        #expect(await api.handle(request("GET", "/nothing-here")).status == .notFound)
    }

    @Test func feedsAreListedAndDeleted() async throws {
        let api = try await makeAPI()
        _ = await api.handle(request("PUT", "/feeds/zeta", body: #"{"sections":[]}"#))
        let list = try json(await api.handle(request("GET", "/feeds")))
        #expect(list.arrayValue?.compactMap { $0["feed"]?.stringValue } == ["blackjack", "forecast", "home", "week", "zeta"])
        #expect(await api.handle(request("DELETE", "/feeds/zeta")).status == .noContent)
        #expect(await api.handle(request("DELETE", "/feeds/zeta")).status == .notFound)
    }

    @Test func actionsPublishBatches() async throws {
        let api = try await makeAPI()
        let deal = try json(await api.handle(request("POST", "/feeds/blackjack/actions/deal")))
        #expect(deal["version"] == 2)
        let select = await api.handle(request("POST", "/feeds/forecast/actions/select", body: #"{"day":"d-wed"}"#))
        #expect(select.status == .ok)
        #expect(await api.handle(request("POST", "/feeds/forecast/actions/select", body: #"{"day":"d-nope"}"#)).status == .unprocessableContent)
        #expect(await api.handle(request("GET", "/feeds/blackjack/actions/deal")).status == .methodNotAllowed)
        let patch = try json(await api.handle(request("PATCH", "/feeds/home", body: #"{"banner":null}"#)))
        #expect(patch["ops"] == 1)
    }

    @Test func constantTimeComparisonOnlyAcceptsTheExactToken() async throws {
        let api = try await makeAPI(token: "abcdefgh")
        for given in ["abcdefg", "abcdefghi", "Abcdefgh", "", "abcdefgh "] {
            let response = await api.handle(request("DELETE", "/feeds/x", headers: ["Host": "x", "Authorization": "Bearer \(given)"]))
            #expect(response.status == .unauthorized, "token '\(given)'")
        }
    }
}
