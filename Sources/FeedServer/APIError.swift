import HTTPServer

/// An error a handler answers with: status, a short error, and a detail a user can act on.
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPStatus
    public var error: String
    public var detail: String
    /// For 405: the methods that are allowed.
    public var allow: String?

    public init(_ status: HTTPStatus, _ error: String, _ detail: String) {
        self.status = status
        self.error = error
        self.detail = detail
    }

    public var errorDescription: String? { "\(status.code) \(error): \(detail)" }

    var response: HTTPResponse {
        var headers = HTTPHeaders()
        if let allow { headers.add("Allow", allow) }
        if status == .notImplemented { headers.add("Connection", "close") }  // its framing is not ours to trust
        if status == .unauthorized { headers.add("WWW-Authenticate", "Bearer realm=\"diffstream\"") }
        return .error(status, error, detail: detail, headers: headers)
    }

    static func invalidField(_ field: String, _ detail: String) -> APIError {
        APIError(.unprocessableContent, "invalid field", "\(field): \(detail)")
    }
}
