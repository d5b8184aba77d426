import FeedCore
import ViewModelHosting
import CoreMetrics
import DiffStreamJSON
import HTTPCore
import Metrics
import Presence

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
/// | `/feeds/{feed}/log[?after=ID[&live=1[&cursor=C]]]` | GET (reads by position, for HTTP caches) |
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
        /// Families bound to their users (``AccessPolicy/boundFamilies``).
        public var boundFamilies: [String: SubjectKey] = [:]
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
        /// The longest wait of a live log read at the head (`GET /feeds/{feed}/log?…&live=1`), in
        /// seconds: ``PollCursor/interval``.
        public var longPollSeconds: Double = PollCursor.interval
        /// Which feeds have presence (`--presence`, `--presence-names`; issue 55), given a ``PresenceFeeds``.
        public var presence = PresencePolicy()
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
    /// The fan-out of each feed multi-feed streams carry: tagged once per event for all their slots.
    package let taggedFeeds = TaggedFeeds()
    /// The live log reads waiting at each feed's head, one subscriber group per feed.
    package let logPolls = LogPolls()
    /// The presence feeds of this instance (nil: no feed has presence).
    package let presence: PresenceFeeds?
    /// What `retry:` tells clients to wait before reconnecting, in milliseconds.
    package static let retryMilliseconds = 2000

    /// The API over `registry`. `metrics` defaults to an endpoint made here, which bootstraps
    /// swift-metrics unless the program did (see ``MetricsEndpoint``); make it sooner and pass it when
    /// metrics are recorded before the API exists.
    /// `presence`: the presence feeds, for the feeds ``Options/presence`` names (nil: none has presence).
    public init(registry: FeedRegistry, hosted: HostedFeeds?, files: (any StaticContent)?, options: Options, serverMetrics: @escaping @Sendable () -> ServerMetrics?,
                metrics: MetricsEndpoint = MetricsEndpoint(), presence: PresenceFeeds? = nil) {
        self.registry = registry
        self.presence = presence
        self.hosted = hosted
        self.files = files
        self.options = options
        self.serverMetrics = serverMetrics
        self.metrics = metrics
        self.authorizer = Authorizer(
            policy: AccessPolicy(adminToken: options.token, privateReads: options.privateReads, publicFeeds: options.publicFeeds, openWrites: options.openWrites,
                                 trustedOrigins: Set([options.publicOrigin, options.allowOrigin].compactMap { $0 }), tls: options.tls, boundFamilies: options.boundFamilies),
            verifier: options.verifier)
        self.announcement = EventPayload(FeedEvents.announcement(retryMilliseconds: Self.retryMilliseconds, heartbeat: options.heartbeat))
    }

    /// The methods this server knows, in the order `Allow` and `OPTIONS` list them; any other is `501`.
    package static let knownMethods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    package static let feedPattern = RoutePattern("/feeds/{feed}")
    package static let logPattern = RoutePattern("/feeds/{feed}/log")
    /// The log route's index in ``patterns``: its errors are never stored by a cache.
    package static let logPatternIndex = patterns.firstIndex(of: logPattern)!

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
        Route("GET", logPattern, .readLog),
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
        var path = request.rawPath
        return path.withUTF8 { bytes in
            // What follows each `/`: the part before the first one (empty for an origin-form target) is not a segment.
            guard var start = bytes.firstIndex(of: UInt8(ascii: "/")).map({ $0 + 1 }) else { return [] }
            var segments: [String] = []
            segments.reserveCapacity(4)
            func take(_ end: Int) {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<end])
                let text = String(decoding: raw, as: UTF8.self)
                segments.append(raw.contains(UInt8(ascii: "%")) ? PercentDecoding.decode(text) ?? text : text)
            }
            for index in start..<bytes.count where bytes[index] == UInt8(ascii: "/") {
                take(index)
                start = index + 1
            }
            take(bytes.count)
            return segments
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
    nonisolated(nonsending) public func handle(_ request: HTTPRequest) async -> HTTPResponse {
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
        if index == Self.logPatternIndex, response.status.code >= 300 {
            // A log read's error is never stored (a cached `404` would outlive the feed's creation).
            let feed = parameters["feed"]
            response.headers.set("Cache-Control", (FeedID.isValid(feed) && authorizer.needsToken(feed) ? LogCaching.privateNoStore : .noStore).header)
        }
        // Nanoseconds from the monotonic clock: a `Duration` would cost the request two 128-bit conversions.
        RequestTimers.shared.timer(route: index, of: Self.patterns, status: response.status.code)
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
    /// `404`), the row of its method that applies, and runs its handler. With no such row, the answer
    /// names what is wrong, in this order: a `{feed}` the caller may not read (`401`/`403`, as `GET`
    /// answers), a `{feed}` that does not exist (`404` naming it, as `GET` does), no row that applies
    /// (`404`: no such action), else `405` with `Allow`. A row that applies takes a missing feed
    /// itself: `PUT` creates it, `GET` and `DELETE` answer `404`, a family's member is made on first use.
    /// - Complexity: O(rows of the pattern); the `{feed}`'s host is looked up at most once of each kind.
    nonisolated(nonsending) func route(_ request: HTTPRequest, _ index: Int, _ parameters: RouteParameters) async throws(APIError) -> HTTPResponse {
        guard Self.knownMethods.contains(request.method) else {
            throw APIError(.notImplemented, "not implemented", "method \(request.method) is not supported")
        }
        if request.method == "OPTIONS" { return preflight() }
        if parameters.value("feed") != nil { _ = try feedName(parameters["feed"]) }
        if let name = parameters.value("feed"), PresenceFeedName.isReserved(name) { return try await routePresence(request, pattern: Self.patterns[index], name: name) }
        let rows = Self.rowsByPattern[index]
        let method = request.method == "HEAD" ? "GET" : request.method
        var conditions = RouteConditions(hosted: hosted, parameters: parameters)
        // The row of the method that applies, if any; else the rows that apply say 404 or 405.
        if let route = rows.first(where: { $0.method == method && conditions.hold($0.condition) }) {
            return try await handle(route.handler, request, parameters)
        }
        if parameters.value("feed") != nil { try await requireFeed(parameters["feed"], request) }
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

    nonisolated(nonsending) func handle(_ handler: Route.Handler, _ request: HTTPRequest, _ parameters: RouteParameters) async throws(APIError) -> HTTPResponse {
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
            try await prepareMember(name)
            let found: Feed?
            do { found = try await registry.read(name) } catch { throw APIError(readError: error) }
            guard let feed = found else { throw Self.noFeed(name) }
            var document = Self.document(await feed.readDocument(), ifNoneMatch: request.headers["If-None-Match"],
                                         acceptsGzip: options.compression && Gzip.isAccepted(by: request.headers["Accept-Encoding"]))
            if let presenceName = presenceName(of: name) { document.headers.set(Self.presenceHeader, presenceName) }
            return document
        case .putFeed:
            try await authorize(.write(name), request)
            let snapshot: WireSnapshot
            do {
                snapshot = try WireCodec.decodeSnapshot(request.body, memo: registry.documentMemo(name))
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
            guard deleted else { throw Self.noFeed(name) }
            return HTTPResponse(status: .noContent)
        case .refuseViewModelWrite:
            if request.method == "DELETE", request.queryValue("reset") != nil { return try await resetKeptState(request, name: name) }
            try await authorize(.write(name), request)
            let detail = request.method == "DELETE"
                ? "'\(name)' is rendered by a view model and cannot be deleted"
                : "'\(name)' is rendered by a view model; change it with PATCH or its actions"
            throw APIError(HTTPStatus(409, "Conflict"), "conflict", detail)
        case .patchFeed:
            guard let host = hosted?.hosted(name) else { throw Self.noFeed(name) }
            try await authorize(.write(name), request)
            let writeID = try Self.idempotencyKey(request)
            let result: FeedWriteResult
            do { result = try await host.patch(body: request.body, writeID: writeID) } catch { throw APIError(error) }
            return Self.acknowledgement(feed: name, version: result.version, ops: result.operations, status: .ok)
        case .subscribe:
            return try await subscribe(request, name: name)
        case .subscribeMany:
            return try await subscribeMany(request)
        case .readLog:
            return try await readLog(request, name: name)
        case .performAction:
            return try await action(request, feed: name, action: parameters["action"])
        case .staticFile:
            if let response = files?.response(for: request, compression: options.compression) { return response }
            throw APIError(.notFound, "not found", "no file or route at \(request.path)")
        }
    }

    /// For a request no row takes: the `{feed}` must exist, else `404` naming it, checked after the
    /// read check `GET` makes (`--private`: `401`/`403`), so that a caller who may not read a feed
    /// learns nothing of whether it exists. A hosted feed and a family's member exist (a member is made
    /// on first use); any other is looked up as `GET` looks it up (with `--redis`, in Redis).
    nonisolated(nonsending) func requireFeed(_ name: String, _ request: HTTPRequest) async throws(APIError) {
        try await authorize(.read(name), request)
        if hosted?.isHosted(name) == true { return }
        let found: Feed?
        do { found = try await registry.read(name) } catch { throw APIError(readError: error) }
        guard found != nil else { throw Self.noFeed(name) }
    }

    /// `404` for a feed that does not exist: `no feed named 'news'`.
    package static func noFeed(_ name: String) -> APIError {
        APIError(.notFound, "not found", "no feed named '\(name)'")
    }

    func feedName(_ text: String) throws(APIError) -> String {
        guard FeedID.isValid(text) else {
            throw APIError(.notFound, "not found", "'\(text.prefix(80))' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)")
        }
        return text
    }

    /// The authorization step: who the request acts as, or the `401`/`403` that refuses it.
    @discardableResult
    nonisolated(nonsending) func authorize(_ access: Access, _ request: HTTPRequest) async throws(APIError) -> Principal {
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
    func preflight() -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [
            "Allow": Self.allMethods,
            "Access-Control-Allow-Methods": Self.allMethods,
            "Access-Control-Allow-Headers": "Authorization, Content-Type, Last-Event-ID, Idempotency-Key, If-None-Match",
            "Access-Control-Max-Age": "600",
        ])
    }

    // MARK: Metrics

    /// Pushes DiffStream's own counters and gauges to swift-metrics (rendering `/metrics` does this too):
    /// with a backend of the program's own, call it as often as that backend should see them change.
    public func publishMetrics() {
        metrics.publish(server: serverMetrics(), feeds: registry.metrics, storage: registry.storage)
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
