import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
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
        ("/feeds/news/log?after=x", "/feeds/{feed}/log"),
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
            "/healthz", "/readyz", "/metrics", "/feeds", "/feeds/{feed}", "/feeds/{feed}/events", "/feeds/{feed}/log", "/feeds/{feed}/actions/{action}", "/events",
            "/{path...}",
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
        #expect(await api.handle(request("PUT", "/feeds/plain", body: #"{"sections":[]}"#)).status == .created)  // a feed that exists
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

    /// A typo in a feed's name is not a wrong verb: a request no route takes, on a feed that does not
    /// exist, is `404` naming the feed (as `GET` answers), before the method or the action is checked.
    @Test(arguments: [
        ("PATCH", "/feeds/nothere"), ("POST", "/feeds/nothere"), ("OPTIONS", "/feeds/nothere"),
        ("POST", "/feeds/nothere/actions/add"), ("GET", "/feeds/nothere/actions/add"), ("HEAD", "/feeds/nothere/actions/add"),
        ("DELETE", "/feeds/nothere/actions/add"), ("POST", "/feeds/nothere/events"), ("PUT", "/feeds/nothere/events"),
        ("GET", "/feeds/nothere"), ("DELETE", "/feeds/nothere"), ("GET", "/feeds/nothere/events"),
    ])
    func anyMethodOnAMissingFeedIs404NamingTheFeed(method: String, path: String) async throws {
        let api = try await makeAPI()
        let response = await api.handle(request(method, path, body: "{}"))
        if method == "OPTIONS" {  // a preflight may come before a PUT creates the feed
            #expect(response.status == .noContent)
            return
        }
        #expect(response.status == .notFound && response.headers["Allow"] == nil)
        if method != "HEAD" { #expect(try json(response) == ["error": "not found", "detail": "no feed named 'nothere'"]) }
    }

    /// The answers a missing feed does not change: `PUT` creates it, and a request no route takes on a
    /// feed that exists is still `405`.
    @Test func aMissingFeedIsStillCreatedByPutAndAnExistingOneStillAnswers405() async throws {
        let api = try await makeAPI()
        #expect(await api.handle(request("PATCH", "/feeds/later", body: "{}")).status == .notFound)
        #expect(await api.handle(request("PUT", "/feeds/later", body: #"{"sections":[]}"#)).status == .created)
        let patch = await api.handle(request("PATCH", "/feeds/later", body: "{}"))
        #expect(patch.status == .methodNotAllowed && patch.headers["Allow"] == "GET, HEAD, PUT, DELETE")
        let action = await api.handle(request("POST", "/feeds/later/actions/add"))
        #expect(try json(action) == ["error": "not found", "detail": "no action 'add' on feed 'later'"])
        #expect(await api.handle(request("DELETE", "/feeds/later")).status == .noContent)
        #expect(try json(await api.handle(request("PATCH", "/feeds/later", body: "{}"))) == ["error": "not found", "detail": "no feed named 'later'"])
    }

    /// A family's member is made on first use: a `PATCH` or an action to one not made yet works, and
    /// a method its family does not take is `405`, not `404`.
    @Test func aFamilysMemberNotMadeYetIsNotMissing() async throws {
        let registry = FeedRegistry(replayLimit: 8)
        let hosted = HostedFeeds(registry: registry)
        _ = try await hosted.host(family: "count", Counter()) { member in Counter.State(count: 0, label: member.key) }
        let api = FeedAPI(registry: registry, hosted: hosted, files: nil, options: .init(), serverMetrics: { nil })
        #expect(try json(await api.handle(request("PATCH", "/feeds/count.alice", body: #"{"label":"x"}"#)))["feed"] == "count.alice")
        #expect(try json(await api.handle(request("POST", "/feeds/count.bob/actions/increment")))["feed"] == "count.bob")
        #expect(await api.handle(request("POST", "/feeds/count.carol")).status == .methodNotAllowed)
        #expect(try json(await api.handle(request("POST", "/feeds/count.dave/actions/nope"))) == ["error": "not found", "detail": "no action 'nope' on feed 'count.dave'"])
    }

    /// With private reads, the read check comes first, as on `GET`: a caller who may not read a feed
    /// gets the same answer whether it exists or not (never a `404` that a `405` would contradict).
    @Test(arguments: ["PATCH /feeds/plain", "PATCH /feeds/nothere", "POST /feeds/plain/actions/add", "POST /feeds/nothere/actions/add",
                      "GET /feeds/plain", "GET /feeds/nothere"])
    func withPrivateReadsAnUnauthorizedCallerCannotTellAMissingFeed(line: String) async throws {
        let registry = FeedRegistry(replayLimit: 8)
        var options = FeedAPI.Options(token: "admin-token")
        options.privateReads = true
        let api = FeedAPI(registry: registry, hosted: HostedFeeds(registry: registry), files: nil, options: options, serverMetrics: { nil })
        let admin: HTTPHeaders = ["Host": "x", "Authorization": "Bearer admin-token"]
        #expect(await api.handle(request("PUT", "/feeds/plain", body: #"{"sections":[]}"#, headers: admin)).status == .created)
        let parts = line.split(separator: " ").map(String.init)
        #expect(await api.handle(request(parts[0], parts[1])).status == .unauthorized)
        // With the right to read, the answer tells.
        let exists = parts[1].contains("plain")
        let expected: HTTPStatus = parts[0] == "GET" ? (exists ? .ok : .notFound) : parts[0] == "PATCH" && exists ? .methodNotAllowed : .notFound
        #expect(await api.handle(request(parts[0], parts[1], headers: admin)).status == expected)
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
