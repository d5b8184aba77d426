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
        try await prepareMember(name)
        let found: Feed?
        do { found = try await registry.read(name) } catch { throw APIError(readError: error) }
        guard let feed = found else { throw Self.noFeed(name) }
        // A stream opened with a signed token ends when the token does (issue 13).
        let expires: Double? = if case .token(let rights) = principal { rights.expires } else { nil }
        let now = options.now
        // The header wins over the query parameter (EventSource cannot set headers on a first connect).
        let lastEventID = request.headers["Last-Event-ID"] ?? request.queryValue("lastEventId")
        // Who is here (issue 55): the stream makes its user present on the feed while it lasts.
        let joining = presenceSettings(of: name) != nil ? try await presenceConnection(request, principal: principal) : nil
        var response = HTTPResponse(status: .ok, headers: [
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]) { [announcement, hosted, self] stream in
            stream.send(announcement)
            Task { [registry] in
                await registry.current(feed).subscribe(stream, lastEventID: lastEventID)
                if let joining { await joinPresence(name, joining, until: stream) }
                if let hosted, hosted.family(of: name) != nil {
                    // A family member stays live while it has a stream (joined before the end is watched).
                    await hosted.joined(name)
                    stream.onTermination { Task { await hosted.left(name) } }
                }
                if let expires { Self.endAtExpiry(stream, feed: name, expires: expires, now: now) }
            }
        }
        if let presenceName = presenceName(of: name) { response.headers.set(Self.presenceHeader, presenceName) }
        return response
    }

    /// Makes `name` live if it is a family member (after the request was authorized): its loader's
    /// refusal is the request's answer (`404` no such key, `500`/`504` loader, `503` family full).
    func prepareMember(_ name: String) async throws(APIError) {
        do { try await hosted?.prepare(name) } catch { throw APIError(error) }
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
