import FeedCore
import ViewModelHosting
import CoreMetrics
import DiffStreamJSON
import HTTPCore
import Metrics

/// The HTTP API: routes requests to feeds, view models and static files, by one table
/// (``routes``); errors of the domain (``ViewModelError``, ``FeedWriteError``, `StoreError`) become
/// HTTP statuses and JSON error bodies here and nowhere else.
///
/// | route                                   | methods            |
/// |-----------------------------------------|--------------------|
/// | `/healthz`, `/readyz`, `/metrics`       | GET                |
/// | `/feeds`                                | GET                |
/// | `/feeds/{feed}`                         | GET, PUT, DELETE; GET, PATCH for a hosted view model |
/// | `/feeds/{feed}/events`                  | GET (SSE)          |
/// | `/events?feed=A&feed=B…`                | GET (SSE, many feeds on one stream) |
/// | `/feeds/{feed}/actions/{action}`        | POST, for a hosted view model's actions |
/// | anything else                           | GET: a file of `Public/` |
public struct FeedAPI: Sendable {
    public struct Options: Sendable {
        /// Bearer token required for writes; nil means writes are open.
        public var token: String?
        /// `Access-Control-Allow-Origin` value; nil means no CORS headers.
        public var allowOrigin: String?
        public var compression: Bool
        /// Verifies signed tokens (JWT); nil when no JWT key is configured.
        public var verifier: (any TokenVerifying)?
        /// `--private`: reads need a token; `--public-feeds`: the exceptions.
        public var privateReads = false
        public var publicFeeds: Set<String> = []
        /// Whether writes are open when there is no write credential (loopback, or `--open-writes`).
        public var openWrites = true
        /// `--public-origin`: the origin users reach the server at (behind a TLS proxy), from which a
        /// write may carry only the cookie, like the server's own origin and the `--allow-origin` one.
        public var publicOrigin: String?
        /// The server itself serves HTTPS (its own origin is `https://` + `Host`).
        public var tls = false
        /// Seconds since 1970: when tokens are checked and when event streams end at a token's expiry.
        public var now: @Sendable () -> Double = Authorizer.wallClock
        /// The transport's heartbeat interval in seconds (`--heartbeat`), announced at the start of
        /// every event stream (`: heartbeat 15`); keep it equal to the transport's.
        public var heartbeat: Double = 15
        /// The most feeds one `GET /events` stream may list (`--max-stream-feeds`).
        public var maxStreamFeeds = 100
        public init(token: String? = nil, allowOrigin: String? = nil, compression: Bool = true) {
            self.token = token
            self.allowOrigin = allowOrigin
            self.compression = compression
        }
    }

    package let registry: FeedRegistry
    package let hosted: HostedFeeds?
    package let files: (any StaticContent)?
    package let options: Options
    package let serverMetrics: @Sendable () -> ServerMetrics?
    /// Where DiffStream's metrics go and what `/metrics` serves.
    public let metrics: MetricsEndpoint
    package let authorizer: Authorizer
    /// The first block of every event stream (`retry:` and the heartbeat announcement), encoded once.
    package let announcement: EventPayload
    /// What `retry:` tells clients to wait before reconnecting, in milliseconds.
    package static let retryMilliseconds = 2000

    /// The API over `registry`. `metrics` defaults to an endpoint made here, which bootstraps
    /// swift-metrics unless the program did (see ``MetricsEndpoint``); make it sooner and pass it when
    /// metrics are recorded before the API exists.
    public init(registry: FeedRegistry, hosted: HostedFeeds?, files: (any StaticContent)?, options: Options, serverMetrics: @escaping @Sendable () -> ServerMetrics?,
                metrics: MetricsEndpoint = MetricsEndpoint()) {
        self.registry = registry
        self.hosted = hosted
        self.files = files
        self.options = options
        self.serverMetrics = serverMetrics
        self.metrics = metrics
        self.authorizer = Authorizer(
            policy: AccessPolicy(adminToken: options.token, privateReads: options.privateReads, publicFeeds: options.publicFeeds, openWrites: options.openWrites,
                                 trustedOrigins: Set([options.publicOrigin, options.allowOrigin].compactMap { $0 }), tls: options.tls),
            verifier: options.verifier)
        self.announcement = EventPayload(FeedEvents.announcement(retryMilliseconds: Self.retryMilliseconds, heartbeat: options.heartbeat))
    }

    /// The methods this server knows, in the order `Allow` and `OPTIONS` list them; any other is `501`.
    package static let knownMethods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    package static let feedPattern = RoutePattern("/feeds/{feed}")

    /// The route table: every method and path the API answers, in the order paths are matched (the
    /// first pattern with the path's shape is the path's resource). `HEAD` is answered as `GET` (the
    /// transport drops the body); `OPTIONS` by ``preflight()``.
    public static let routes: [Route] = [
        Route("GET", RoutePattern("/healthz"), .health),
        Route("GET", RoutePattern("/readyz"), .ready),
        Route("GET", RoutePattern("/metrics"), .metrics),
        Route("GET", RoutePattern("/feeds"), .listFeeds),
        Route("GET", feedPattern, .getFeed),
        Route("PUT", feedPattern, when: .snapshotFeed, .putFeed),
        Route("DELETE", feedPattern, when: .snapshotFeed, .deleteFeed),
        Route("PATCH", feedPattern, when: .patchable, .patchFeed),
        Route("PUT", feedPattern, when: .viewModelFeed, listed: false, .refuseViewModelWrite),
        Route("DELETE", feedPattern, when: .viewModelFeed, listed: false, .refuseViewModelWrite),
        Route("GET", RoutePattern("/feeds/{feed}/events"), .subscribe),
        Route("GET", RoutePattern("/events"), .subscribeMany),
        Route("POST", RoutePattern("/feeds/{feed}/actions/{action}"), when: .action, .performAction),
        Route("GET", RoutePattern("/{path...}"), .staticFile),
    ]

    /// The table's patterns, each once, in the order they are matched.
    package static let patterns: [RoutePattern] = routes.reduce(into: []) { patterns, route in
        if !patterns.contains(route.pattern) { patterns.append(route.pattern) }
    }

    /// The table's rows of each pattern, by the pattern's index in ``patterns``: a matched path's rows
    /// without comparing patterns per request.
    package static let rowsByPattern: [[Route]] = patterns.map { pattern in routes.filter { $0.pattern == pattern } }

    /// What `OPTIONS` lists: every method of the table, `HEAD` with `GET`, and `OPTIONS`.
    package static let allMethods: String = {
        let methods = Set(routes.map(\.method))
        return knownMethods.filter { methods.contains($0) || $0 == "OPTIONS" || ($0 == "HEAD" && methods.contains("GET")) }
            .joined(separator: ", ")
    }()

    /// The pattern whose shape `request`'s path has, e.g. `/feeds/{feed}/events`: a bounded label
    /// for the request (`/{path...}` for anything that is not an API route).
    /// - Complexity: O(patterns × segments).
    public static func pattern(of request: HTTPRequest) -> RoutePattern {
        patterns[match(segments(of: request)).index]
    }

    /// Split the raw path first, then decode each segment: an encoded slash is part of a name. Split
    /// on the bytes (a `/` is one byte in UTF-8, never inside a character's bytes) and decode only a
    /// segment with a `%` in it: this runs on every request.
    /// - Complexity: O(length of the path).
    package static func segments(of request: HTTPRequest) -> [String] {
        request.rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().map { raw in
            let text = String(Substring(raw))
            return raw.contains(UInt8(ascii: "%")) ? PercentDecoding.decode(text) ?? text : text
        }
    }

    /// The first pattern with the shape of `segments`, by its index in ``patterns``, and its parameters
    /// (the last pattern, `/{path...}`, takes any path).
    package static func match(_ segments: [String]) -> (index: Int, parameters: RouteParameters) {
        for (index, pattern) in patterns.enumerated() {
            if let parameters = pattern.match(segments) { return (index, parameters) }
        }
        return (patterns.count - 1, RouteParameters([("path", segments.joined(separator: "/"))]))
    }

    /// Answers one request.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = MonotonicClock.now()
        var response: HTTPResponse
        let segments = Self.segments(of: request)
        let (index, parameters) = Self.match(segments)
        do {
            response = try await route(request, index, parameters)
        } catch {
            response = error.response
        }
        if let feed = parameters.value("feed"), FeedID.isValid(feed) { response.logMetadata["feed"] = .string(feed) }
        // Nanoseconds from the monotonic clock: a `Duration` would cost the request two 128-bit conversions.
        MetricHandles.shared.requestTimer(route: index, of: Self.patterns, status: response.status.code)
            .recordNanoseconds(Int64((MonotonicClock.now() - started) * 1e9))
        // A response that set its own (the browser library's `*`) keeps it.
        if let origin = options.allowOrigin, response.headers["Access-Control-Allow-Origin"] == nil {
            response.headers.set("Access-Control-Allow-Origin", origin)
            response.headers.set("Access-Control-Expose-Headers", "ETag")  // a read's position, to the page's script
            if origin != "*" { response.headers.add("Vary", "Origin") }
        }
        return response
    }

    /// Finds the request's row of the table: its path's pattern (a `{feed}` must be a feed id, else
    /// `404`), the rows that apply to it (none: `404`), the row of its method (none: `405` with
    /// `Allow`), then runs the row's handler.
    /// - Complexity: O(rows of the pattern); the `{feed}`'s host is looked up at most once of each kind.
    private func route(_ request: HTTPRequest, _ index: Int, _ parameters: RouteParameters) async throws(APIError) -> HTTPResponse {
        guard Self.knownMethods.contains(request.method) else {
            throw APIError(.notImplemented, "not implemented", "method \(request.method) is not supported")
        }
        if request.method == "OPTIONS" { return preflight() }
        if parameters.value("feed") != nil { _ = try feedName(parameters["feed"]) }
        let rows = Self.rowsByPattern[index]
        let method = request.method == "HEAD" ? "GET" : request.method
        var conditions = RouteConditions(hosted: hosted, parameters: parameters)
        // The row of the method that applies, if any; else the rows that apply say 404 or 405.
        if let route = rows.first(where: { $0.method == method && conditions.hold($0.condition) }) {
            return try await handle(route.handler, request, parameters)
        }
        let applicable = rows.filter { conditions.hold($0.condition) }
        guard !applicable.isEmpty else {
            throw APIError(ViewModelError.unknownAction(feed: parameters["feed"], action: parameters["action"]))
        }
        throw MethodNotAllowed(allowed: Self.allowed(applicable), method: request.method).error
    }

    /// The `Allow` header's methods for the rows that apply to a path: the listed ones, in table
    /// order, with `HEAD` after `GET`.
    package static func allowed(_ routes: [Route]) -> [String] {
        var methods: [String] = []
        for route in routes where route.isListed && !methods.contains(route.method) {
            methods.append(route.method)
            if route.method == "GET" { methods.append("HEAD") }
        }
        return methods
    }

    private func handle(_ handler: Route.Handler, _ request: HTTPRequest, _ parameters: RouteParameters) async throws(APIError) -> HTTPResponse {
        let name = parameters["feed"]
        switch handler {
        case .health:
            return .json(Array("{\"status\":\"ok\"}\n".utf8))
        case .ready:
            return await readiness()
        case .metrics:
            await registry.refreshUsage()
            guard let body = metrics.render(server: serverMetrics(), feeds: registry.metrics, storage: registry.storage) else {
                throw APIError(.notFound, "not found", "metrics go to the program's own backend")
            }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4"], body: body)
        case .listFeeds:
            return Self.json(try await listFeeds(as: try await authorize(.list, request)))
        case .getFeed:
            try await authorize(.read(name), request)
            let found: Feed?
            do { found = try await registry.latest(name) } catch { throw APIError(readError: error) }
            guard let feed = found else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            return Self.document(await feed.readDocument(), ifNoneMatch: request.headers["If-None-Match"],
                                 acceptsGzip: options.compression && Gzip.isAccepted(by: request.headers["Accept-Encoding"]))
        case .putFeed:
            try await authorize(.write(name), request)
            let snapshot: WireSnapshot
            do {
                snapshot = try WireCodec.decodeSnapshot(request.body)
            } catch {
                if case .malformed = error { throw APIError(.badRequest, "malformed json", error.description) }
                throw APIError(.unprocessableContent, "invalid snapshot", error.description)
            }
            let writeID = try Self.idempotencyKey(request)
            let result: FeedWriteResult
            do { result = try await registry.write(name, snapshot: snapshot, options: FeedWriteOptions(writeID: writeID)) } catch { throw APIError(writeError: error) }
            return Self.acknowledgement(feed: name, version: result.version, ops: result.operations, status: result.created ? .created : .ok)
        case .deleteFeed:
            try await authorize(.write(name), request)
            let writeID = try Self.idempotencyKey(request)
            let deleted: Bool
            do { deleted = try await registry.delete(name, writeID: writeID) } catch { throw APIError(writeError: error) }
            guard deleted else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            return HTTPResponse(status: .noContent)
        case .refuseViewModelWrite:
            try await authorize(.write(name), request)
            let detail = request.method == "DELETE"
                ? "'\(name)' is rendered by a view model and cannot be deleted"
                : "'\(name)' is rendered by a view model; change it with PATCH or its actions"
            throw APIError(HTTPStatus(409, "Conflict"), "conflict", detail)
        case .patchFeed:
            guard let host = hosted?.hosted(name) else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            try await authorize(.write(name), request)
            let writeID = try Self.idempotencyKey(request)
            let result: FeedWriteResult
            do { result = try await host.patch(body: request.body, writeID: writeID) } catch { throw APIError(error) }
            return Self.acknowledgement(feed: name, version: result.version, ops: result.operations, status: .ok)
        case .subscribe:
            return try await subscribe(request, name: name)
        case .subscribeMany:
            return try await subscribeMany(request)
        case .performAction:
            return try await action(request, feed: name, action: parameters["action"])
        case .staticFile:
            if let response = files?.response(for: request, compression: options.compression) { return response }
            throw APIError(.notFound, "not found", "no file or route at \(request.path)")
        }
    }

    private func feedName(_ text: String) throws(APIError) -> String {
        guard FeedID.isValid(text) else {
            throw APIError(.notFound, "not found", "'\(text.prefix(80))' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)")
        }
        return text
    }

    /// The authorization step: who the request acts as, or the `401`/`403` that refuses it.
    @discardableResult
    private func authorize(_ access: Access, _ request: HTTPRequest) async throws(APIError) -> Principal {
        switch await authorizer.authorize(access, headers: request.headers, query: request.query, now: options.now()) {
        case .allow(let principal):
            return principal
        case .unauthorized(let detail, let invalidToken):
            var error = APIError(.unauthorized, "unauthorized", detail)
            if invalidToken { error.challenge = "Bearer realm=\"diffstream\", error=\"invalid_token\"" }  // RFC 6750 §3.1
            throw error
        case .forbidden(let detail):
            throw APIError(.forbidden, "forbidden", detail)
        }
    }

    /// `OPTIONS`, on any path: a CORS preflight may come before the resource exists (a `PUT` that
    /// creates a feed), so it lists every method of the route table.
    private func preflight() -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [
            "Allow": Self.allMethods,
            "Access-Control-Allow-Methods": Self.allMethods,
            "Access-Control-Allow-Headers": "Authorization, Content-Type, Last-Event-ID, Idempotency-Key, If-None-Match",
            "Access-Control-Max-Age": "600",
        ])
    }

    // MARK: Feeds

    private func listFeeds(as principal: Principal) async throws(APIError) -> [FeedListing] {
        let listed: [(name: String, version: Int)]
        do { listed = try await registry.list() } catch { throw APIError(readError: error) }
        return listed.filter { authorizer.mayRead($0.name, as: principal) }.map { entry in
            guard let host = hosted?.hosted(entry.name) else {
                return FeedListing(feed: entry.name, version: entry.version, kind: "snapshot")
            }
            return FeedListing(feed: entry.name, version: entry.version, kind: "viewModel", patch: host.acceptsPatch,
                               actions: host.actionList.map(ActionListing.init))
        }
    }

    /// `GET /feeds/{feed}`: the document with its position as a strong `ETag`, the event id quoted
    /// (the gzip variant's tag is the server's to add, ``EntityTag/gzipVariant(of:)``); `304` when
    /// `If-None-Match` names the tag of a representation this request may get (RFC 9110 §13.1.2): the
    /// gzip one only when the client takes gzip. The 304 carries that tag and the 200's `Vary` (§15.4.5).
    /// - Parameter acceptsGzip: compression is on and the request's `Accept-Encoding` takes gzip.
    package static func document(_ read: (id: EventID, json: [UInt8]), ifNoneMatch: String?, acceptsGzip: Bool) -> HTTPResponse {
        let tag = "\"\(read.id)\""
        let current = acceptsGzip ? [tag, EntityTag.gzipVariant(of: tag)] : [tag]
        if let ifNoneMatch, let held = EntityTag.match(ifNoneMatch: ifNoneMatch, among: current) {
            return HTTPResponse(status: .notModified, headers: ["ETag": held, "Cache-Control": "no-cache", "Vary": "Accept-Encoding"])
        }
        var response = HTTPResponse.json(read.json + [0x0A])
        response.headers.set("ETag", tag)
        response.headers.set("Cache-Control", "no-cache")
        return response
    }

    /// A JSON body from an `Encodable` value, keys in the order it encodes them, and a newline.
    package static func json(_ body: some Encodable, status: HTTPStatus = .ok) -> HTTPResponse {
        do {
            return .json(try JSONValueEncoder().encodeBytes(body, terminator: "\n"), status: status)
        } catch {
            return APIError(.internalServerError, "not encodable", "the response could not be written as JSON: \(error)").response
        }
    }

    private func subscribe(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        let principal = try await authorize(.subscribe(name), request)
        let found: Feed?
        do { found = try await registry.latest(name) } catch { throw APIError(readError: error) }
        guard let feed = found else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
        // A stream opened with a signed token ends when the token does (issue 13).
        let expires: Double? = if case .token(let rights) = principal { rights.expires } else { nil }
        let now = options.now
        // The header wins over the query parameter (EventSource cannot set headers on a first connect).
        let lastEventID = request.headers["Last-Event-ID"] ?? request.queryValue("lastEventId")
        return HTTPResponse(status: .ok, headers: [
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]) { [announcement] stream in
            stream.send(announcement)
            Task { [registry] in
                await registry.current(feed).subscribe(stream, lastEventID: lastEventID)
                if let expires { Self.endAtExpiry(stream, feed: name, expires: expires, now: now) }
            }
        }
    }

    /// `GET /events?feed=A&feed=B@ID…`: many feeds on one stream (see ``MultiFeedRequest`` and
    /// ``FeedMultiplexer``). Each feed is checked on its own: one refused, missing or deleted ends only
    /// its own part (`event: forbidden`, `unauthorized`, `notfound`, `deleted`). Only when every feed
    /// is refused does the request get a plain status: `401` if any needs a token and none was sent,
    /// else `403` if any is forbidden, else `404`.
    private func subscribeMany(_ request: HTTPRequest) async throws(APIError) -> HTTPResponse {
        let listed = try MultiFeedRequest(request, limit: options.maxStreamFeeds)
        let names = listed.entries.map(\.feed)
        let principal: Principal, decisions: [AuthorizationDecision]
        switch await authorizer.authorizeSubscriptions(to: names, headers: request.headers, query: request.query, now: options.now()) {
        case .failure(let invalid):
            var error = APIError(.unauthorized, "unauthorized", invalid.detail)
            error.challenge = "Bearer realm=\"diffstream\", error=\"invalid_token\""  // RFC 6750 §3.1
            throw error
        case .success(let decided):
            (principal, decisions) = decided
        }
        let allowed = zip(listed.entries, decisions).compactMap { entry, decision in if case .allow = decision { entry.feed } else { nil } }
        var found = await registry.latest(allowed).makeIterator()
        var opened: [(entry: MultiFeedRequest.Entry, outcome: MultiFeedOutcome)] = []
        for (entry, decision) in zip(listed.entries, decisions) {
            switch decision {
            case .allow:
                switch found.next() {
                case .success(let feed?)?: opened.append((entry, .open(feed)))
                case .failure(let error)?: opened.append((entry, .unavailable(error.description)))
                case .success(nil)?, nil: opened.append((entry, .notFound))
                }
            case .unauthorized(let detail, _): opened.append((entry, .unauthorized(detail)))
            case .forbidden(let detail): opened.append((entry, .forbidden(detail)))
            }
        }
        if !opened.contains(where: { if case .open = $0.outcome { true } else { false } }) {
            throw Self.everyFeedRefused(opened.map { ($0.entry.feed, $0.outcome) })
        }
        let expires: Double? = if case .token(let rights) = principal { rights.expires } else { nil }
        let now = options.now
        var response = HTTPResponse(status: .ok, headers: [
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]) { [announcement, opened] stream in
            let multiplexer = FeedMultiplexer(stream)
            multiplexer.send(announcement)
            Task { [registry] in
                for (entry, outcome) in opened {
                    switch outcome {
                    case .open(let feed):
                        await registry.current(feed).subscribe(multiplexer.makeSlot(feed: entry.feed), lastEventID: entry.position, tagged: true)
                    case .notFound:
                        multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("notfound", feed: entry.feed, error: "not found", detail: "no feed named \(entry.feed)")))
                    case .forbidden(let detail):
                        multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("forbidden", feed: entry.feed, error: "forbidden", detail: detail)))
                    case .unauthorized(let detail):
                        multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("unauthorized", feed: entry.feed, error: "token required", detail: detail)))
                    case .unavailable(let detail):
                        multiplexer.refuse(EventPayload(FeedEvents.unavailableEvent(feed: entry.feed, detail: detail)))
                    }
                }
                multiplexer.finishOpening()
                if let expires { Self.endAtExpiry(multiplexer, expires: expires, now: now) }
            }
        }
        response.logMetadata["feeds"] = "\(names.count)"
        return response
    }

    /// What happens to one listed feed of a multi-feed stream.
    private enum MultiFeedOutcome: Sendable {
        case open(Feed), notFound, forbidden(String), unauthorized(String)
        /// The shared store (Redis) cannot be reached to load the feed.
        case unavailable(String)
    }

    /// The plain status of a multi-feed request whose every feed is refused, with each feed's refusal.
    private static func everyFeedRefused(_ outcomes: [(feed: String, outcome: MultiFeedOutcome)]) -> APIError {
        var error = everyFeedRefusedStatus(outcomes)
        error.feeds = outcomes.compactMap { feed, outcome in
            switch outcome {
            case .open: nil
            case .notFound: FeedRefusal(feed: feed, event: "notfound", error: "not found", detail: "no feed named \(feed)")
            case .forbidden(let detail): FeedRefusal(feed: feed, event: "forbidden", error: "forbidden", detail: detail)
            case .unauthorized(let detail): FeedRefusal(feed: feed, event: "unauthorized", error: "token required", detail: detail)
            case .unavailable(let detail): FeedRefusal(feed: feed, event: "unavailable", error: "redis unavailable", detail: detail)
            }
        }
        return error
    }

    private static func everyFeedRefusedStatus(_ outcomes: [(feed: String, outcome: MultiFeedOutcome)]) -> APIError {
        func feeds(_ match: (MultiFeedOutcome) -> Bool) -> String {
            outcomes.filter { match($0.outcome) }.map { "'\($0.feed)'" }.joined(separator: ", ")
        }
        let unauthorized = feeds { if case .unauthorized = $0 { true } else { false } }
        if !unauthorized.isEmpty {
            return APIError(.unauthorized, "unauthorized", "these feeds are private: send a token ('Authorization: Bearer <token>', the \(Authorizer.cookieName) cookie or ?\(Authorizer.queryName)=); no token for \(unauthorized)")
        }
        let unavailable = outcomes.compactMap { if case .unavailable(let detail) = $0.outcome { detail } else { nil } }
        if let detail = unavailable.first {
            return APIError(.serviceUnavailable, "redis unavailable", detail)
        }
        let forbidden = feeds { if case .forbidden = $0 { true } else { false } }
        if !forbidden.isEmpty {
            return APIError(.forbidden, "forbidden", "this token may read none of the feeds listed; it may not read \(forbidden)")
        }
        return APIError(.notFound, "not found", "no feed named \(feeds { _ in true })")
    }

    /// Sends `event: unauthorized` for every feed still open and ends the multi-feed stream once its
    /// token has expired.
    private static func endAtExpiry(_ multiplexer: FeedMultiplexer, expires: Double, now: @escaping @Sendable () -> Double) {
        let timer = Task {
            let seconds = expires - now()
            if seconds > 0 { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) }
            multiplexer.end { EventPayload(FeedEvents.unauthorizedEvent(feed: $0)) }
        }
        multiplexer.sink.onTermination { timer.cancel() }
    }

    /// Sends `event: unauthorized` and ends `stream` once its token has expired.
    private static func endAtExpiry(_ stream: any EventSink, feed: String, expires: Double, now: @escaping @Sendable () -> Double) {
        let timer = Task {
            let seconds = expires - now()
            if seconds > 0 { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) }
            stream.end(with: EventPayload(FeedEvents.unauthorizedEvent(feed: feed)))
        }
        stream.onTermination { timer.cancel() }
    }

    private func action(_ request: HTTPRequest, feed: String, action: String) async throws(APIError) -> HTTPResponse {
        guard let host = hosted?.hosted(feed) else {
            throw APIError(.notFound, "not found", "no action '\(action.prefix(80))' on feed '\(feed)'")
        }
        let access: Access = hosted?.isPublic(action: action, feed: feed) == true ? .publicAction(feed) : .write(feed)
        try await authorize(access, request)
        let writeID = try Self.idempotencyKey(request)
        let result: FeedWriteResult
        do { result = try await host.perform(action, body: request.body, writeID: writeID) } catch { throw APIError(error) }
        return Self.acknowledgement(feed: feed, version: result.version, ops: result.operations, status: .ok)
    }

    /// The request's `Idempotency-Key` (1 to 128 visible ASCII characters): with a shared store, the
    /// write's id, so a retry of the same write gets the first answer and runs once. Nil without one.
    package static func idempotencyKey(_ request: HTTPRequest) throws(APIError) -> String? {
        guard let key = request.headers["Idempotency-Key"] else { return nil }
        guard (1...128).contains(key.utf8.count), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw APIError(.badRequest, "bad idempotency key", "Idempotency-Key must be 1 to 128 visible ASCII characters (no spaces)")
        }
        return key
    }

    /// `GET /readyz`: whether this instance can serve writes and fresh reads now (with Redis: whether
    /// it answers, checked now), for load balancers. `/healthz` stays liveness.
    private func readiness() async -> HTTPResponse {
        guard registry.shared != nil else { return .json(Array("{\"status\":\"ready\"}\n".utf8)) }
        guard let problem = await registry.readiness() else { return .json(Array("{\"status\":\"ready\",\"redis\":\"ok\"}\n".utf8)) }
        var writer = JSONWriter()
        writer.raw("{\"status\":\"unavailable\",\"redis\":")
        writer.write(problem)
        writer.raw("}\n")
        return HTTPResponse(status: .serviceUnavailable, headers: ["Content-Type": "application/json"], body: writer.bytes)
    }

    /// The answer to a change a hosted view model took (a `PATCH` or an action): `200` with
    /// `{"feed":"todo","version":3,"ops":1}`. Public so that the testing product answers as the API does.
    public static func acknowledgement(feed: String, _ result: ChangeResult) -> HTTPResponse {
        acknowledgement(feed: feed, version: result.version, ops: result.operations, status: .ok)
    }

    /// `{"feed":"news","version":2,"ops":3}` and a newline: what a write answers. Written directly, not
    /// through `Encodable`: it is on the hot path of every write (an encoder's machinery cost a
    /// durable PUT several thousand instructions).
    package static func acknowledgement(feed: String, version: Int, ops: Int, status: HTTPStatus) -> HTTPResponse {
        var writer = JSONWriter(capacity: 48 + feed.utf8.count)
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"version\":")
        writer.write(version)
        writer.raw(",\"ops\":")
        writer.write(ops)
        writer.raw("}\n")
        return .json(writer.bytes, status: status)
    }

    // MARK: Metrics

    /// Pushes DiffStream's own counters and gauges to swift-metrics (rendering `/metrics` does this too):
    /// with a backend of the program's own, call it as often as that backend should see them change.
    public func publishMetrics() {
        metrics.publish(server: serverMetrics(), feeds: registry.metrics, storage: registry.storage)
    }
}

/// One entry of `GET /feeds`: `{"feed":"todo","version":3,"kind":"viewModel","patch":false,"actions":[…]}`,
/// or `{"feed":"news","version":2,"kind":"snapshot"}`.
package struct FeedListing: Encodable {
    package var feed: String
    package var version: Int
    package var kind: String
    package var patch: Bool?
    package var actions: [ActionListing]?
}

/// An action as `GET /feeds` lists it:
/// `{"name":"add","public":true,"fields":[{"name":"title","type":"string","optional":false,"nullable":false}]}`.
package struct ActionListing: Encodable {
    package struct Field: Encodable {
        var name: String
        var type: String
        /// For a field of type `item`: the kind of item it names.
        var itemKind: String?
        var optional: Bool
        var nullable: Bool
    }

    package var name: String
    package var isPublic: Bool
    package var fields: [Field]

    package enum CodingKeys: String, CodingKey {
        case name, isPublic = "public", fields
    }

    package init(_ action: ActionDescription) {
        name = action.name
        isPublic = action.isPublic
        fields = action.fields.map { field in
            let (type, itemKind): (String, String?) = switch field.type {
            case .string: ("string", nil)
            case .integer: ("integer", nil)
            case .number: ("number", nil)
            case .boolean: ("boolean", nil)
            case .item(let kind): ("item", kind)
            }
            return Field(name: field.name, type: type, itemKind: itemKind, optional: field.isOptional, nullable: field.isNullable)
        }
    }
}

/// Whether route rows' conditions hold for one matched path, the `{feed}`'s hosting looked up once.
private struct RouteConditions {
    package let hosted: HostedFeeds?
    package let parameters: RouteParameters
    private var isHosted: Bool?
    private var host: (any HostedFeed)??

    package init(hosted: HostedFeeds?, parameters: RouteParameters) {
        self.hosted = hosted
        self.parameters = parameters
    }

    package mutating func hold(_ condition: Route.Condition) -> Bool {
        switch condition {
        case .always: true
        case .snapshotFeed: !feedIsHosted()
        case .viewModelFeed: feedIsHosted()
        case .patchable: feedHost()?.acceptsPatch ?? false
        case .action: feedHost()?.actionList.contains { $0.name == parameters["action"] } ?? false
        }
    }

    private mutating func feedIsHosted() -> Bool {
        if let isHosted { return isHosted }
        let answer = hosted?.isHosted(parameters["feed"]) ?? false
        isHosted = answer
        return answer
    }

    private mutating func feedHost() -> (any HostedFeed)? {
        if let host { return host }
        let answer = hosted?.hosted(parameters["feed"])
        host = .some(answer)
        return answer
    }
}

/// A 405 with its `Allow` header (RFC 9110 §15.5.6).
package struct MethodNotAllowed {
    package var allowed: [String]
    package var method: String
    package var error: APIError {
        var error = APIError(.methodNotAllowed, "method not allowed", "\(method) is not allowed here; allowed: \(allowed.joined(separator: ", "))")
        error.allow = allowed.joined(separator: ", ")
        return error
    }
}

/// Comparison whose time does not depend on where the inputs differ.
package enum ConstantTime {
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        let count = max(a.count, b.count)
        for index in 0..<count {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0xFF
            difference |= x ^ y
        }
        return difference == 0 && a.count == b.count
    }
}
