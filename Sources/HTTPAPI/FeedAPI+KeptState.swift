import FeedCore
import HTTPCore
import ViewModelHosting

extension FeedAPI {
    /// `DELETE /feeds/{feed}?reset=kept-state` of a hosted feed or a family member: discards the state
    /// kept for it, readable or not (``HostedFeeds/resetKeptState(_:)``), so that a state no program can
    /// read (`500 kept state unreadable`) is replaced only by an operator's deliberate act. A write, and
    /// with a write credential configured, one of the admin token only (a signed token is `403`).
    /// Answers `204`; any other `reset` value is `422`.
    nonisolated(nonsending) func resetKeptState(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        let principal = try await authorize(.write(name), request)
        if case .token = principal {
            throw APIError(.forbidden, "forbidden", "resetting the kept state of '\(name)' takes the admin token")
        }
        guard request.queryValue("reset") == "kept-state" else {
            throw APIError(.unprocessableContent, "invalid query", "reset must be 'kept-state' (DELETE /feeds/\(name)?reset=kept-state discards the state kept for it)")
        }
        guard let hosted else { throw Self.noFeed(name) }
        let found: Bool
        do { found = try await hosted.resetKeptState(name) } catch { throw APIError(error) }
        guard found else { throw Self.noFeed(name) }
        return HTTPResponse(status: .noContent)
    }
}
