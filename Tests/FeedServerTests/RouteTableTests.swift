import DiffStreamJSON
import FeedServer
import EpollRuntime
import Testing
import TestSupport

struct RoutePatternTests {
    @Test(arguments: [
        ("/healthz", "/healthz"),
        ("/metrics", "/metrics"),
        ("/feeds", "/feeds"),
        ("/feeds/", "/feeds/{feed}"),
        ("/feeds/news", "/feeds/{feed}"),
        ("/feeds/news?x=1", "/feeds/{feed}"),
        ("/feeds/a%2Fb", "/feeds/{feed}"),
        ("/fee%64s/news", "/feeds/{feed}"),
        ("/feeds/news/events", "/feeds/{feed}/events"),
        ("/feeds/news/actions/add", "/feeds/{feed}/actions/{action}"),
        ("/feeds/news/other", "/{path...}"),
        ("/feeds/news/events/more", "/{path...}"),
        ("/", "/{path...}"),
        ("/index.html", "/{path...}"),
        ("/events?feed=a&feed=b", "/events"),
        ("/healthz/x", "/{path...}"),
    ])
    func aRequestIsLabelledWithItsPatternNeverItsPath(target: String, pattern: String) {
        #expect(FeedAPI.pattern(of: HTTPRequest(method: "GET", target: target)).description == pattern)
    }

    @Test func theTableHasEachRouteOnce() {
        let rows = FeedAPI.routes.map { "\($0.method) \($0.pattern)" }
        #expect(Set(FeedAPI.routes.map(\.pattern.description)) == [
            "/healthz", "/readyz", "/metrics", "/feeds", "/feeds/{feed}", "/feeds/{feed}/events", "/feeds/{feed}/actions/{action}", "/events", "/{path...}",
        ])
        // PUT and DELETE of /feeds/{feed} have two rows: a feed of snapshots, and a view model's (409).
        #expect(rows.filter { $0 == "PUT /feeds/{feed}" || $0 == "DELETE /feeds/{feed}" }.count == 4)
    }
}

extension FeedAPITests {
    @Test(arguments: [
        ("DELETE", "/healthz", "GET, HEAD"),
        ("POST", "/metrics", "GET, HEAD"),
        ("PUT", "/feeds", "GET, HEAD"),
        ("PATCH", "/feeds/plain", "GET, HEAD, PUT, DELETE"),
        ("POST", "/feeds/plain", "GET, HEAD, PUT, DELETE"),
        ("POST", "/feeds/counter", "GET, HEAD, PATCH"),
        ("POST", "/feeds/counter/events", "GET, HEAD"),
        ("GET", "/feeds/counter/actions/add", "POST"),
        ("HEAD", "/feeds/counter/actions/add", "POST"),
        ("PUT", "/index.html", "GET, HEAD"),
    ])
    func aMethodARouteDoesNotTakeIs405WithAllowFromTheTable(method: String, path: String, allow: String) async throws {
        let api = try await makeAPI()
        let response = await api.handle(request(method, path))
        #expect(response.status == .methodNotAllowed)
        #expect(response.headers["Allow"] == allow)
        guard case .bytes(let body) = response.body else { throw TestFailure("not a body") }
        #expect(String(decoding: body, as: UTF8.self) == #"{"error":"method not allowed","detail":"\#(method) is not allowed here; allowed: \#(allow)"}"# + "\n")
    }

    @Test(arguments: ["/", "/feeds", "/feeds/new", "/feeds/counter/actions/add", "/anything"])
    func optionsListsEveryMethodOfTheTableOnAnyPath(path: String) async throws {
        let response = try await makeAPI().handle(request("OPTIONS", path))
        #expect(response.status == .noContent)
        #expect(response.headers["Allow"] == "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
        #expect(response.headers["Access-Control-Allow-Methods"] == response.headers["Allow"])
        let listed = Set(response.headers["Allow"]?.split(separator: ",").map { String($0.drop { $0 == " " }) } ?? [])
        #expect(listed == Set(FeedAPI.routes.map(\.method)).union(["HEAD", "OPTIONS"]))
    }

    @Test(arguments: ["/healthz", "/feeds", "/feeds/counter", "/feeds/nope", "/nothing-here"])
    func headIsAnsweredByTheGetRoute(path: String) async throws {
        let api = try await makeAPI()
        let get = await api.handle(request("GET", path))
        let head = await api.handle(request("HEAD", path))
        #expect(head.status == get.status)
        #expect(head.headers == get.headers)
    }

    @Test func aViewModelsFeedRefusesPutAndDeleteWith409WhichAllowDoesNotList() async throws {
        let api = try await makeAPI()
        let put = await api.handle(request("PUT", "/feeds/counter", body: #"{"sections":[]}"#))
        #expect(put.status.code == 409 && put.headers["Allow"] == nil)
        #expect(try json(put) == ["error": "conflict", "detail": "'counter' is rendered by a view model; change it with PATCH or its actions"])
        let delete = await api.handle(request("DELETE", "/feeds/counter"))
        #expect(try json(delete) == ["error": "conflict", "detail": "'counter' is rendered by a view model and cannot be deleted"])
        #expect(await api.handle(request("POST", "/feeds/counter")).headers["Allow"] == "GET, HEAD, PATCH")
    }

    @Test func anUnknownActionOrABadFeedIdIs404WhateverTheMethod() async throws {
        let api = try await makeAPI()
        for method in ["GET", "POST"] {
            let response = await api.handle(request(method, "/feeds/counter/actions/nope"))
            #expect(try json(response) == ["error": "not found", "detail": "no action 'nope' on feed 'counter'"])
        }
        #expect(await api.handle(request("PATCH", "/feeds/.hidden")).status == .notFound)
    }
}
