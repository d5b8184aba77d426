import FeedCore
import ViewModelHosting
import DiffStreamJSON
import FeedStorage
import HTTPCore

/// An error a handler answers with: status, a short error, and a detail a user can act on.
public struct APIError: Error, Sendable, Equatable {
    public var status: HTTPStatus
    public var error: String
    public var detail: String
    /// For 405: the methods that are allowed.
    public var allow: String?
    /// For 401: the `WWW-Authenticate` challenge (RFC 6750 §3).
    public var challenge = "Bearer realm=\"diffstream\""
    /// For 507: the limit that was reached and its value, added to the body as `"limit"` and `"value"`.
    public var limit: (name: String, value: Int)?
    /// For a multi-feed stream whose every feed was refused: each feed's own refusal, added to the body
    /// as `"feeds"`, so that a client can treat each as the stream would have (retry a missing one).
    public var feeds: [FeedRefusal]?
    /// For 503: seconds to wait before trying again (`Retry-After`, RFC 9110 §10.2.3).
    public var retryAfter: Int?

    public init(_ status: HTTPStatus, _ error: String, _ detail: String) {
        self.status = status
        self.error = error
        self.detail = detail
    }

    public var errorDescription: String? { "\(status.code) \(error): \(detail)" }

    public static func == (a: APIError, b: APIError) -> Bool {
        a.status == b.status && a.error == b.error && a.detail == b.detail && a.allow == b.allow && a.challenge == b.challenge
            && a.limit?.name == b.limit?.name && a.limit?.value == b.limit?.value && a.feeds == b.feeds && a.retryAfter == b.retryAfter
    }

    /// The response a handler answers with: the status, its headers (`Allow`, `WWW-Authenticate`,
    /// …) and the JSON body, `{"error":"…","detail":"…"}` (plus `"limit"` and `"value"` for a `507`).
    /// Public so that code outside the API (the testing product, a program of its own) can show
    /// exactly what the server would answer, from the same mapping.
    public var response: HTTPResponse {
        var headers = HTTPHeaders()
        if let allow { headers.add("Allow", allow) }
        if status == .notImplemented { headers.add("Connection", "close") }  // its framing is not ours to trust
        if status == .unauthorized { headers.add("WWW-Authenticate", challenge) }
        if let retryAfter { headers.add("Retry-After", String(retryAfter)) }
        if let limit {
            var response = FeedAPI.json(LimitErrorBody(error: error, detail: detail, limit: limit.name, value: limit.value), status: status)
            for (name, value) in headers { response.headers.add(name, value) }
            return response
        }
        if let feeds {
            var response = FeedAPI.json(RefusedFeedsBody(error: error, detail: detail, feeds: feeds), status: status)
            for (name, value) in headers { response.headers.add(name, value) }
            return response
        }
        return .error(status, error, detail: detail, headers: headers)
    }

    /// `507 Insufficient Storage` (RFC 4918 §11.5) for a write that would pass a storage limit.
    package static func storageLimit(_ exceeded: StorageLimitExceeded) -> APIError {
        var error = APIError(HTTPStatus(507, "Insufficient Storage"), "insufficient storage", exceeded.description)
        error.limit = (exceeded.limit.rawValue, exceeded.value)
        return error
    }

    /// A write refused by a storage limit (507) or by the store (503); nothing changed.
    package init(writeError: FeedWriteError) {
        switch writeError {
        case .limit(let exceeded): self = .storageLimit(exceeded)
        case .store(let error): self.init(storeError: error)
        case .conflict: self.init(.serviceUnavailable, "conflict", "other writes to this feed won every attempt; nothing was written, retry")
        case .fenced: self.init(.serviceUnavailable, "fenced", "another instance holds this feed's lease; nothing was written")
        case .idempotencyKeyReused:
            self.init(.unprocessableContent, "idempotency key reused",
                      "this Idempotency-Key was sent with another request to this feed (another method, action or body); nothing was written: use a new key for a new request")
        case .busy(let limit):
            self.init(HTTPStatus(429, "Too Many Requests"), "too many writes",
                      "\(limit) writes already wait for this feed; nothing was written: retry after the Retry-After seconds")
            self.retryAfter = 1
        }
    }

    /// A read the store could not answer (Redis unreachable for a feed this instance does not hold,
    /// or the list of every feed): 503, so the client retries.
    package init(readError: StoreError) {
        switch readError {
        case .unreachable: self.init(.serviceUnavailable, "redis unavailable", "\(readError.description); retry once Redis is back")
        default: self.init(.serviceUnavailable, "storage error", "\(readError.description); retry later")
        }
    }

    /// A write the store could not make durable: 503, so the client retries, or 507 when Redis is full
    /// (``StoreError/outOfMemory(url:reason:)``: it takes writes again only once memory is freed); nothing changed.
    package init(storeError: StoreError) {
        switch storeError {
        case .full: self.init(.serviceUnavailable, "storage full", "\(storeError.description); the write was not stored, retry once space is freed")
        case .outOfMemory:
            self.init(HTTPStatus(507, "Insufficient Storage"), "storage full",
                      "\(storeError.description); nothing was written: retry once Redis has memory again (feeds deleted, or its maxmemory raised)")
        case .unreachable: self.init(.serviceUnavailable, "redis unavailable", "\(storeError.description); the write was not acknowledged (if Redis stopped answering mid-way it may have been made): retry it with the same Idempotency-Key, which runs it at most once")
        default: self.init(.serviceUnavailable, "storage error", "\(storeError.description); the write was not stored, retry later")
        }
    }

    /// What a hosted view model's refusal answers: the status and short error of each case, with
    /// the error's description as the detail.
    ///
    /// | ``ViewModelError``      | status | error                 |
    /// |-------------------------|--------|-----------------------|
    /// | `malformedJSON`         | 400    | `malformed json`      |
    /// | `invalidBody`           | 422    | `invalid body`        |
    /// | `invalidField`          | 422    | `invalid field`       |
    /// | `changeRefused`         | 422    | `change refused`      |
    /// | `renderFailed`          | 422    | `render failed`       |
    /// | `stateNotEncodable`     | 500    | `state not encodable` |
    /// | `unknownAction`         | 404    | `not found`           |
    /// | `patchNotAccepted`      | 405    | `method not allowed` (with `Allow`) |
    /// | `patchUndoneByLoader`   | 409    | `conflict`            |
    /// | `notPublished`          | 507 or 503, as ``init(writeError:)`` |
    /// | `noSuchMember`          | 404    | `not found`           |
    /// | `loaderFailed`          | 500    | `loader failed`       |
    /// | `loaderTimedOut`        | 504    | `loader timed out`    |
    /// | `familyFull`            | 503    | `family full` (with `Retry-After`) |
    /// | `keptStateUnreadable`   | 500    | `kept state unreadable` |
    public init(_ error: ViewModelError) {
        switch error {
        case .malformedJSON: self.init(.badRequest, "malformed json", error.description)
        case .invalidBody: self.init(.unprocessableContent, "invalid body", error.description)
        case .invalidField: self.init(.unprocessableContent, "invalid field", error.description)
        case .changeRefused: self.init(.unprocessableContent, "change refused", error.description)
        case .renderFailed: self.init(.unprocessableContent, "render failed", error.description)
        case .stateNotEncodable: self.init(.internalServerError, "state not encodable", error.description)
        case .unknownAction: self.init(.notFound, "not found", error.description)
        case .patchNotAccepted:
            // As the route table answers a PATCH of such a feed: the methods its rows allow.
            let rows = FeedAPI.routes.filter { $0.pattern == FeedAPI.feedPattern && [.always, .viewModelFeed].contains($0.condition) }
            self = MethodNotAllowed(allowed: FeedAPI.allowed(rows), method: "PATCH").error
        case .patchUndoneByLoader: self.init(HTTPStatus(409, "Conflict"), "conflict", error.description)
        case .notPublished(let writeError): self.init(writeError: writeError)
        case .noSuchMember: self.init(.notFound, "not found", error.description)
        case .loaderFailed: self.init(.internalServerError, "loader failed", error.description)
        case .loaderTimedOut: self.init(HTTPStatus(504, "Gateway Timeout"), "loader timed out", error.description)
        case .familyFull(_, _, _, let retryAfter):
            self.init(.serviceUnavailable, "family full", error.description)
            self.retryAfter = retryAfter
        case .keptStateUnreadable: self.init(.internalServerError, "kept state unreadable", error.description)
        }
    }
}

/// The body of a `507`: `{"error":"insufficient storage","detail":"…","limit":"max-feeds","value":1000}`.
/// One feed's refusal in a multi-feed request refused whole: `{"feed","event","error","detail"}`, where
/// `event` is the event the stream would have sent for it (`notfound`, `forbidden`, `unauthorized`,
/// `unavailable`).
public struct FeedRefusal: Encodable, Sendable, Equatable {
    public var feed: String
    public var event: String
    public var error: String
    public var detail: String
}

package struct RefusedFeedsBody: Encodable {
    package var error: String
    package var detail: String
    package var feeds: [FeedRefusal]
}

package struct LimitErrorBody: Encodable {
    package var error: String
    package var detail: String
    package var limit: String
    package var value: Int
}
