import FeedCore
import ViewModelHosting
import CoreMetrics
import DiffStreamJSON
import HTTPCore
import Metrics

/// A hosted view model's actions (`POST /feeds/{feed}/actions/{action}`) and `Idempotency-Key`.
extension FeedAPI {
    func action(_ request: HTTPRequest, feed: String, action: String) async throws(APIError) -> HTTPResponse {
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
}
