import FeedCore
import ViewModelHosting
import CoreMetrics
import DiffStreamJSON
import HTTPCore
import Metrics

/// A feed's event stream (`GET /feeds/{feed}/events`).
extension FeedAPI {
    func subscribe(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        let principal = try await authorize(.subscribe(name), request)
        let found: Feed?
        do { found = try await registry.read(name) } catch { throw APIError(readError: error) }
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

    /// Sends `event: unauthorized` and ends `stream` once its token has expired.
    static func endAtExpiry(_ stream: any EventSink, feed: String, expires: Double, now: @escaping @Sendable () -> Double) {
        let timer = Task {
            let seconds = expires - now()
            if seconds > 0 { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) }
            stream.end(with: EventPayload(FeedEvents.unauthorizedEvent(feed: feed)))
        }
        stream.onTermination { timer.cancel() }
    }
}
