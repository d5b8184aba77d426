import JSONEscaping
import Logging

/// A response: status, headers, and either a complete body or an event stream.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: Body
    /// Metadata added to this request's log lines (for an event stream, its connect and disconnect
    /// lines too): the feed's name, for instance. Never put a credential here.
    public var logMetadata: Logger.Metadata = [:]

    public enum Body: Sendable {
        /// A complete body; `Content-Length` is set from it.
        case bytes([UInt8])
        /// A long-lived stream (SSE): the handler gets the ``EventStream`` once the head is queued.
        case stream(@Sendable (any EventSink) -> Void)
    }

    public init(status: HTTPStatus, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = .bytes(body)
    }

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], stream: @escaping @Sendable (any EventSink) -> Void) {
        self.status = status
        self.headers = headers
        self.body = .stream(stream)
    }

    /// A JSON error body, `{"error":"…","detail":"…"}`, as every error of this server is.
    public static func error(_ status: HTTPStatus, _ error: String, detail: String, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/json")
        var body = Array("{\"error\":".utf8)
        JSONStringEscaping.append(error, to: &body)
        body.append(contentsOf: ",\"detail\":".utf8)
        JSONStringEscaping.append(detail, to: &body)
        body.append(contentsOf: "}\n".utf8)
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    /// A JSON body from already-encoded bytes.
    public static func json(_ bytes: [UInt8], status: HTTPStatus = .ok) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: bytes)
    }
}

/// A status code with its reason phrase.
public struct HTTPStatus: Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code) \(reason)" }

    public static let ok = HTTPStatus(200, "OK")
    public static let created = HTTPStatus(201, "Created")
    public static let noContent = HTTPStatus(204, "No Content")
    public static let notModified = HTTPStatus(304, "Not Modified")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let unauthorized = HTTPStatus(401, "Unauthorized")
    public static let forbidden = HTTPStatus(403, "Forbidden")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let lengthRequired = HTTPStatus(411, "Length Required")
    public static let contentTooLarge = HTTPStatus(413, "Content Too Large")
    public static let uriTooLong = HTTPStatus(414, "URI Too Long")
    public static let unsupportedMediaType = HTTPStatus(415, "Unsupported Media Type")
    public static let unprocessableContent = HTTPStatus(422, "Unprocessable Content")
    public static let headerFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(505, "HTTP Version Not Supported")
}
