import DiffStreamJSON
import HTTPServer

/// The HTTP API: routes requests to feeds, view models and static files.
///
/// | route                                   | methods            |
/// |-----------------------------------------|--------------------|
/// | `/healthz`, `/metrics`                  | GET                |
/// | `/feeds`                                | GET                |
/// | `/feeds/{feed}`                         | GET, PUT, DELETE; PATCH for `home` |
/// | `/feeds/{feed}/events`                  | GET (SSE)          |
/// | `/feeds/blackjack/actions/deal`         | POST               |
/// | `/feeds/forecast/actions/select`        | POST               |
/// | anything else                           | GET: a file of `Public/` |
public struct FeedAPI: Sendable {
    public struct Options: Sendable {
        /// Bearer token required for writes; nil means writes are open.
        public var token: String?
        /// `Access-Control-Allow-Origin` value; nil means no CORS headers.
        public var allowOrigin: String?
        public var compression: Bool
        public init(token: String? = nil, allowOrigin: String? = nil, compression: Bool = true) {
            self.token = token
            self.allowOrigin = allowOrigin
            self.compression = compression
        }
    }

    let registry: FeedRegistry
    let viewModels: ViewModelFeeds?
    let files: StaticFiles?
    let options: Options
    let serverMetrics: @Sendable () -> ServerMetrics?

    public init(registry: FeedRegistry, viewModels: ViewModelFeeds?, files: StaticFiles?, options: Options, serverMetrics: @escaping @Sendable () -> ServerMetrics?) {
        self.registry = registry
        self.viewModels = viewModels
        self.files = files
        self.options = options
        self.serverMetrics = serverMetrics
    }

    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// Answers one request.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        var response: HTTPResponse
        do {
            response = try await route(request)
        } catch {
            response = error.response
        }
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
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch (segments.first, segments.count) {
        case ("healthz", 1):
            try allow(request, ["GET"])
            return .json(Array("{\"status\":\"ok\"}\n".utf8))
        case ("metrics", 1):
            try allow(request, ["GET"])
            return HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4"], body: Array(metricsText().utf8))
        case ("feeds", 1):
            try allow(request, ["GET"])
            return .json(await listFeeds())
        case ("feeds", 2):
            return try await feedResource(request, name: try feedName(segments[1]))
        case ("feeds", 3) where segments[2] == "events":
            try allow(request, ["GET"])
            return try await subscribe(request, name: try feedName(segments[1]))
        case ("feeds", 4) where segments[2] == "actions":
            return try await action(request, feed: segments[1], action: segments[3])
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

    private func authorize(_ request: HTTPRequest) throws(APIError) {
        guard let token = options.token else { return }
        let given = request.headers["Authorization"] ?? ""
        let prefix = "Bearer "
        let presented = given.hasPrefix(prefix) ? String(given.dropFirst(prefix.count)) : ""
        guard ConstantTime.equal(Array(presented.utf8), Array(token.utf8)) else {
            throw APIError(.unauthorized, "unauthorized", given.isEmpty ? "this server needs 'Authorization: Bearer <token>' for writes" : "the bearer token is not valid")
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

    private func listFeeds() async -> [UInt8] {
        var writer = JSONWriter()
        writer.byte(UInt8(ascii: "["))
        for (index, entry) in await registry.list().enumerated() {
            if index > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.raw("{\"feed\":")
            writer.write(entry.name)
            writer.raw(",\"version\":")
            writer.write(entry.version)
            writer.byte(UInt8(ascii: "}"))
        }
        writer.raw("]\n")
        return writer.bytes
    }

    private func feedResource(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        let isViewModel = viewModels != nil && ViewModelFeeds.names.contains(name)
        switch request.method {
        case "GET":
            guard let feed = await registry.feed(name) else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            return .json(await feed.document().json + [0x0A])
        case "PUT":
            try authorize(request)
            if isViewModel { throw APIError(HTTPStatus(409, "Conflict"), "conflict", "'\(name)' is rendered by a view model; change it with PATCH or its actions") }
            let snapshot: WireSnapshot
            do {
                snapshot = try WireCodec.decodeSnapshot(request.body)
            } catch {
                if case .malformed = error { throw APIError(.badRequest, "malformed json", error.description) }
                throw APIError(.unprocessableContent, "invalid snapshot", error.description)
            }
            let result = await registry.put(name, snapshot: snapshot)
            return .json(writeResult(name, result.version, result.operations), status: result.created ? .created : .ok)
        case "DELETE":
            try authorize(request)
            if isViewModel { throw APIError(HTTPStatus(409, "Conflict"), "conflict", "'\(name)' is rendered by a view model and cannot be deleted") }
            guard await registry.delete(name) else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
            return HTTPResponse(status: .noContent)
        case "PATCH" where name == "home" && viewModels != nil:
            try authorize(request)
            let patch: JSONValue
            do { patch = try JSONParser.parse(request.body) } catch { throw APIError(.badRequest, "malformed json", error.description) }
            let operations = try await viewModels!.patchHome(patch)
            return .json(writeResult(name, await registry.feed(name)?.version ?? 0, operations))
        default:
            try allow(request, isViewModel ? (name == "home" ? ["GET", "PATCH"] : ["GET"]) : ["GET", "PUT", "DELETE"])
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
        guard let feed = await registry.feed(name) else { throw APIError(.notFound, "not found", "no feed named '\(name)'") }
        // The header wins over the query parameter (EventSource cannot set headers on a first connect).
        let lastEventID = request.headers["Last-Event-ID"] ?? request.queryValue("lastEventId")
        return HTTPResponse(status: .ok, headers: [
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]) { stream in
            Task { await feed.subscribe(stream, lastEventID: lastEventID) }
        }
    }

    private func action(_ request: HTTPRequest, feed: String, action: String) async throws(APIError) -> HTTPResponse {
        guard let viewModels else { throw APIError(.notFound, "not found", "no action \(action) on \(feed)") }
        switch (feed, action) {
        case ("blackjack", "deal"):
            try allow(request, ["POST"])
            try authorize(request)
            let operations = await viewModels.deal()
            return .json(writeResult(feed, await registry.feed(feed)?.version ?? 0, operations))
        case ("forecast", "select"):
            try allow(request, ["POST"])
            try authorize(request)
            let body: JSONValue
            do { body = try JSONParser.parse(request.body) } catch { throw APIError(.badRequest, "malformed json", error.description) }
            guard let day = body["day"]?.stringValue else { throw .invalidField("day", "expected a string: the id of a daily item") }
            let operations = try await viewModels.select(day: day)
            return .json(writeResult(feed, await registry.feed(feed)?.version ?? 0, operations))
        default:
            throw APIError(.notFound, "not found", "no action '\(action)' on feed '\(feed)'")
        }
    }

    // MARK: Metrics

    private func metricsText() -> String {
        var text = ""
        if let metrics = serverMetrics() {
            for metric in metrics.values {
                text += "# HELP \(metric.name) \(metric.help)\n# TYPE \(metric.name) \(metric.type)\n\(metric.name) \(metric.value)\n"
            }
        }
        return text + registry.metrics.exposition()
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
