import CoreMetrics
import DiffStreamJSON
import HTTPServer
import Metrics

/// The HTTP API: routes requests to feeds, view models and static files.
///
/// | route                                   | methods            |
/// |-----------------------------------------|--------------------|
/// | `/healthz`, `/metrics`                  | GET                |
/// | `/feeds`                                | GET                |
/// | `/feeds/{feed}`                         | GET, PUT, DELETE; GET, PATCH for a hosted view model |
/// | `/feeds/{feed}/events`                  | GET (SSE)          |
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
        /// Seconds since 1970: when tokens are checked and when event streams end at a token's expiry.
        public var now: @Sendable () -> Double = Authorizer.wallClock
        public init(token: String? = nil, allowOrigin: String? = nil, compression: Bool = true) {
            self.token = token
            self.allowOrigin = allowOrigin
            self.compression = compression
        }
    }

    let registry: FeedRegistry
    let hosted: HostedFeeds?
    let files: StaticFiles?
    let options: Options
    let serverMetrics: @Sendable () -> ServerMetrics?
    /// Where DiffStream's metrics go and what `/metrics` serves.
    public let metrics: MetricsEndpoint
    let authorizer: Authorizer

    /// The API over `registry`. `metrics` defaults to an endpoint made here, which bootstraps
    /// swift-metrics unless the program did (see ``MetricsEndpoint``); make it sooner and pass it when
    /// metrics are recorded before the API exists.
    public init(registry: FeedRegistry, hosted: HostedFeeds?, files: StaticFiles?, options: Options, serverMetrics: @escaping @Sendable () -> ServerMetrics?,
                metrics: MetricsEndpoint = MetricsEndpoint()) {
        self.registry = registry
        self.hosted = hosted
        self.files = files
        self.options = options
        self.serverMetrics = serverMetrics
        self.metrics = metrics
        self.authorizer = Authorizer(
            policy: AccessPolicy(adminToken: options.token, privateReads: options.privateReads, publicFeeds: options.publicFeeds, openWrites: options.openWrites),
            verifier: options.verifier)
    }

    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// Answers one request.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = ContinuousClock.now
        var response: HTTPResponse
        do {
            response = try await route(request)
        } catch {
            response = error.response
        }
        if let feed = Route.feedName(of: request) { response.logMetadata["feed"] = "\(feed)" }
        Metrics.Timer(label: MetricName.requestDuration, dimensions: [("route", Route.pattern(of: request)), ("status", String(response.status.code))])
            .record(duration: ContinuousClock.now - started)
        if let origin = options.allowOrigin {
            response.headers.set("Access-Control-Allow-Origin", origin)
            if origin != "*" { response.headers.add("Vary", "Origin") }
        }
        return response
    }

    private func route(_ request: HTTPRequest) async throws(APIError) -> HTTPResponse {
        guard Self.knownMethods.contains(request.method) else {
            throw APIError(.notImplemented, "not implemented", "method \(request.method) is not supported")
        }
        if request.method == "OPTIONS" { return preflight() }
        // Split the raw path first, then decode each segment: an encoded slash is part of a name.
        let segments = request.rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { raw in
            PercentDecoding.decode(String(raw)) ?? String(raw)
        }
        switch (segments.first, segments.count) {
        case ("healthz", 1):
            try allow(request, ["GET"])
            return .json(Array("{\"status\":\"ok\"}\n".utf8))
        case ("metrics", 1):
            try allow(request, ["GET"])
            guard let body = metrics.render(server: serverMetrics(), feeds: registry.metrics, storage: registry.storage) else {
                throw APIError(.notFound, "not found", "metrics go to the program's own backend")
            }
            return HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4"], body: body)
        case ("feeds", 1):
            try allow(request, ["GET"])
            return .json(await listFeeds(as: try await authorize(.list, request)))
        case ("feeds", 2):
            return try await feedResource(request, name: try feedName(segments[1]))
        case ("feeds", 3) where segments[2] == "events":
            try allow(request, ["GET"])
            return try await subscribe(request, name: try feedName(segments[1]))
        case ("feeds", 4) where segments[2] == "actions":
            return try await action(request, feed: try feedName(segments[1]), action: segments[3])
        default:
            try allow(request, ["GET"])
            if let response = files?.response(for: request, compression: options.compression) { return response }
            throw APIError(.notFound, "not found", "no file or route at \(request.path)")
        }
    }

    private func allow(_ request: HTTPRequest, _ methods: [String]) throws(APIError) {
        guard methods.contains(request.method) else {
            var listed = methods
            if methods.contains("GET") { listed.insert("HEAD", at: listed.firstIndex(of: "GET")! + 1) }
            throw MethodNotAllowed(allowed: listed, method: request.method).error
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

    private func preflight() -> HTTPResponse {
        HTTPResponse(status: .noContent, headers: [
            "Allow": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
            "Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
            "Access-Control-Allow-Headers": "Authorization, Content-Type, Last-Event-ID",
            "Access-Control-Max-Age": "600",
        ])
    }

    // MARK: Feeds

    private func listFeeds(as principal: Principal) async -> [UInt8] {
        var writer = JSONWriter()
        writer.byte(UInt8(ascii: "["))
        for (index, entry) in await registry.list().filter({ authorizer.mayRead($0.name, as: principal) }).enumerated() {
            if index > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.raw("{\"feed\":")
            writer.write(entry.name)
            writer.raw(",\"version\":")
            writer.write(entry.version)
            if let host = hosted?.hosted(entry.name) {
                writer.raw(",\"kind\":\"viewModel\",\"patch\":")
                writer.raw(host.acceptsPatch ? "true" : "false")
                writer.raw(",\"actions\":")
                Self.write(host.actionList, to: &writer)
            } else {
                writer.raw(",\"kind\":\"snapshot\"")
            }
            writer.byte(UInt8(ascii: "}"))
        }
        writer.raw("]\n")
        return writer.bytes
    }

    private func feedResource(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        let isViewModel = hosted?.isHosted(name) ?? false
        switch request.method {
        case "GET":
            try await authorize(.read(name), request)
            guard let feed = await registry.feed(name) else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            return .json(await feed.document().json + [0x0A])
        case "PUT":
            try await authorize(.write(name), request)
            if isViewModel { throw APIError(HTTPStatus(409, "Conflict"), "conflict", "'\(name)' is rendered by a view model; change it with PATCH or its actions") }
            let snapshot: WireSnapshot
            do {
                snapshot = try WireCodec.decodeSnapshot(request.body)
            } catch {
                if case .malformed = error { throw APIError(.badRequest, "malformed json", error.description) }
                throw APIError(.unprocessableContent, "invalid snapshot", error.description)
            }
            let result: (created: Bool, version: Int, operations: Int)
            do { result = try await registry.put(name, snapshot: snapshot) } catch { throw APIError(writeError: error) }
            return .json(writeResult(name, result.version, result.operations), status: result.created ? .created : .ok)
        case "DELETE":
            try await authorize(.write(name), request)
            if isViewModel { throw APIError(HTTPStatus(409, "Conflict"), "conflict", "'\(name)' is rendered by a view model and cannot be deleted") }
            let deleted: Bool
            do { deleted = try await registry.delete(name) } catch { throw APIError(storeError: error) }
            guard deleted else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            return HTTPResponse(status: .noContent)
        case "PATCH":
            guard let host = hosted?.hosted(name), host.acceptsPatch else {
                try allow(request, isViewModel ? ["GET"] : ["GET", "PUT", "DELETE"])
                throw APIError(.methodNotAllowed, "method not allowed", request.method)
            }
            try await authorize(.write(name), request)
            let result = try await host.patch(body: request.body)
            return .json(writeResult(name, result.version, result.operations))
        default:
            let patchable = hosted?.hosted(name)?.acceptsPatch ?? false
            try allow(request, isViewModel ? (patchable ? ["GET", "PATCH"] : ["GET"]) : ["GET", "PUT", "DELETE"])
            throw APIError(.methodNotAllowed, "method not allowed", request.method)
        }
    }

    private func writeResult(_ name: String, _ version: Int, _ operations: Int) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("{\"feed\":")
        writer.write(name)
        writer.raw(",\"version\":")
        writer.write(version)
        writer.raw(",\"ops\":")
        writer.write(operations)
        writer.raw("}\n")
        return writer.bytes
    }

    private func subscribe(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        let principal = try await authorize(.subscribe(name), request)
        guard let feed = await registry.feed(name) else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
        // A stream opened with a signed token ends when the token does (issue 13).
        let expires: Double? = if case .token(let rights) = principal { rights.expires } else { nil }
        let now = options.now
        // The header wins over the query parameter (EventSource cannot set headers on a first connect).
        let lastEventID = request.headers["Last-Event-ID"] ?? request.queryValue("lastEventId")
        return HTTPResponse(status: .ok, headers: [
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]) { stream in
            Task {
                await feed.subscribe(stream, lastEventID: lastEventID)
                if let expires { Self.endAtExpiry(stream, feed: name, expires: expires, now: now) }
            }
        }
    }

    /// Sends `event: unauthorized` and ends `stream` once its token has expired.
    private static func endAtExpiry(_ stream: EventStream, feed: String, expires: Double, now: @escaping @Sendable () -> Double) {
        let timer = Task {
            let seconds = expires - now()
            if seconds > 0 { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) }
            stream.send(EventPayload(FeedEvents.unauthorizedEvent(feed: feed)))
            stream.close()
        }
        stream.onTermination { timer.cancel() }
    }

    private func action(_ request: HTTPRequest, feed: String, action: String) async throws(APIError) -> HTTPResponse {
        guard let host = hosted?.hosted(feed), host.actionList.contains(where: { $0.name == action }) else {
            throw APIError(.notFound, "not found", "no action '\(action.prefix(80))' on feed '\(feed)'")
        }
        try allow(request, ["POST"])
        let access: Access = hosted?.isPublic(action: action, feed: feed) == true ? .publicAction(feed) : .write(feed)
        try await authorize(access, request)
        let result = try await host.perform(action, body: request.body)
        return .json(writeResult(feed, result.version, result.operations))
    }

    /// `[{"name":"add","public":true,"fields":[{"name":"title","type":"string","optional":false,"nullable":false}]}]`
    static func write(_ actions: [ActionDescription], to writer: inout JSONWriter) {
        writer.byte(UInt8(ascii: "["))
        for (index, action) in actions.enumerated() {
            if index > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.raw("{\"name\":")
            writer.write(action.name)
            writer.raw(",\"public\":")
            writer.raw(action.isPublic ? "true" : "false")
            writer.raw(",\"fields\":[")
            for (fieldIndex, field) in action.fields.enumerated() {
                if fieldIndex > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.raw("{\"name\":")
                writer.write(field.name)
                writer.raw(",\"type\":")
                switch field.type {
                case .string: writer.raw("\"string\"")
                case .integer: writer.raw("\"integer\"")
                case .number: writer.raw("\"number\"")
                case .boolean: writer.raw("\"boolean\"")
                case .item(let kind):
                    writer.raw("\"item\",\"itemKind\":")
                    writer.write(kind)
                }
                writer.raw(",\"optional\":")
                writer.raw(field.isOptional ? "true" : "false")
                writer.raw(",\"nullable\":")
                writer.raw(field.isNullable ? "true" : "false")
                writer.byte(UInt8(ascii: "}"))
            }
            writer.raw("]}")
        }
        writer.byte(UInt8(ascii: "]"))
    }

    // MARK: Metrics

    /// Pushes DiffStream's own counters and gauges to swift-metrics (rendering `/metrics` does this too):
    /// with a backend of the program's own, call it as often as that backend should see them change.
    public func publishMetrics() {
        metrics.publish(server: serverMetrics(), feeds: registry.metrics, storage: registry.storage)
    }
}

/// What the request log and the metrics know of a request's route.
enum Route {
    /// The route pattern that answers `request` (`/feeds/{feed}`), as ``FeedAPI``'s routing picks it:
    /// a bounded set of label values, never a raw path.
    static func pattern(of request: HTTPRequest) -> String {
        let segments = request.rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch (segments.first, segments.count) {
        case ("healthz", 1): return "/healthz"
        case ("metrics", 1): return "/metrics"
        case ("feeds", 1): return "/feeds"
        case ("feeds", 2): return "/feeds/{feed}"
        case ("feeds", 3) where segments[2] == "events": return "/feeds/{feed}/events"
        case ("feeds", 4) where segments[2] == "actions": return "/feeds/{feed}/actions/{action}"
        default: return "/{file}"
        }
    }

    /// The feed a `/feeds/{feed}…` request names, if it is a valid feed id (never anything else of the path).
    static func feedName(of request: HTTPRequest) -> String? {
        let segments = request.rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard segments.count >= 2, segments.first == "feeds" else { return nil }
        let raw = String(segments[segments.startIndex + 1])
        let name = PercentDecoding.decode(raw) ?? raw
        return FeedID.isValid(name) ? name : nil
    }
}

/// A 405 with its `Allow` header (RFC 9110 §15.5.6).
struct MethodNotAllowed {
    var allowed: [String]
    var method: String
    var error: APIError {
        var error = APIError(.methodNotAllowed, "method not allowed", "\(method) is not allowed here; allowed: \(allowed.joined(separator: ", "))")
        error.allow = allowed.joined(separator: ", ")
        return error
    }
}

/// Comparison whose time does not depend on where the inputs differ.
enum ConstantTime {
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
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
