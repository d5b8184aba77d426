import FeedCore
import DiffStreamJSON
import HTTPCore

/// Reads by position (`GET /feeds/{feed}/log`, issue 54): the feed's history as plain, cacheable HTTP,
/// so that nginx or a CDN serves a public feed's readers and the origin answers each URL once per
/// cache. The rules are pure types (``LogQuery``, ``LogChunk``, ``PollCursor``, ``LogCaching``,
/// ``LogAnswer``); the feed answers from what it holds (``Feed/logRead(after:end:)``); live readers
/// at the head wait together (``LogPolls``).
extension FeedAPI {
    func readLog(_ request: HTTPRequest, name: String) async throws(APIError) -> HTTPResponse {
        try await authorize(.read(name), request)
        let query: LogQuery
        do { query = try LogQuery.parse(request.query) } catch { throw APIError(.badRequest, "bad query", error.detail) }
        try await prepareMember(name)
        let found: Feed?
        do { found = try await registry.read(name) } catch { throw APIError(readError: error) }
        guard let feed = found else { throw Self.noFeed(name) }
        let needsToken = authorizer.needsToken(name)
        var read = await feed.logRead(after: query.position, end: LogChunk.end)
        if case .live(let position, _) = query, case .batches(_, _, let batches) = read, batches.isEmpty {
            // With a shared store, the copy held now (one dropped as idle since the read is replaced).
            let feed = await registry.current(feed)
            // A family member stays live while it has a reader waiting, as while it has a stream.
            let member = hosted.flatMap { $0.family(of: name) != nil ? $0 : nil }
            await member?.joined(name)
            let wake = await logPolls.wait(on: feed, at: position, seconds: options.longPollSeconds)
            await member?.left(name)
            switch wake {
            case .events(let events):
                let (batches, head) = Self.batches(in: events, after: position)
                if !batches.isEmpty {
                    // What the feed sent: the head as it broadcast it (with `--replay 0` too, which keeps no window).
                    read = .batches(history: position.history, head: head, batches: batches)
                } else {
                    read = await feed.logRead(after: position, end: LogChunk.end)
                }
            case .timeout:
                break
            case .deleted:
                throw Self.noFeed(name)
            case .readAgain, .ended:
                read = await feed.logRead(after: position, end: LogChunk.end)
            case .shutdown:
                var error = APIError(.serviceUnavailable, "shutting down", "the server is shutting down; retry")
                error.retryAfter = 1
                throw error
            }
        }
        return try answer(read, to: query, feed: name, needsToken: needsToken)
    }

    /// The answer to `query` from what the feed holds.
    func answer(_ read: FeedLogRead, to query: LogQuery, feed name: String, needsToken: Bool) throws(APIError) -> HTTPResponse {
        let (position, requested): (EventID?, Int?) = if case .live(let position, let cursor) = query { (position, cursor) } else { (nil, nil) }
        let jitter = position.flatMap { position in requested.map { PollCursor.jitter(at: position, after: $0) } } ?? 0
        let cursor = PollCursor.next(after: requested, now: options.now(), jitter: jitter)
        let answer: LogAnswer
        let caching: LogCaching
        switch read {
        case .missing:
            throw Self.noFeed(name)
        case .startOver(let reason):
            var writer = JSONWriter()
            writer.raw("{\"error\":\"start over\",\"detail\":")
            writer.write(reason + "; start again from the start")
            writer.raw(",\"feed\":")
            writer.write(name)
            writer.raw(",\"start\":")
            writer.write("/feeds/\(name)/log")
            writer.raw("}\n")
            return HTTPResponse(status: HTTPStatus(409, "Conflict"), headers: ["Content-Type": "application/json"], body: writer.bytes)
        case .start(let id, let snapshot):
            answer = LogAnswer(feed: name, history: id.history, snapshot: snapshot, batches: [], next: id, upToDate: true, cursor: cursor)
            caching = LogCaching.of(needsToken: needsToken, live: false, complete: false)
        case .batches(let history, let head, let batches):
            let after = query.position?.version ?? head
            let end = after + batches.count
            answer = LogAnswer(feed: name, history: history, batches: batches, next: EventID(history: history, version: end), upToDate: end >= head, cursor: cursor)
            caching = LogCaching.of(needsToken: needsToken, live: query.isLive, complete: LogChunk.isComplete(after: after, end: end))
        }
        var response = HTTPResponse.json(answer.json)
        response.headers.set("Cache-Control", caching.header)
        return response
    }

    /// The batches of `events` (the events the feed sent) that follow `position` without a gap, up to
    /// the end of its chunk: each one's data; and the head they show (the last batch's version, past
    /// the chunk's end when they go on after it).
    /// - Complexity: O(events).
    package static func batches(in events: [EventFields], after position: EventID) -> (batches: [[UInt8]], head: Int) {
        var batches: [[UInt8]] = []
        var head = position.version
        let boundary = LogChunk.boundary(after: position.version)
        for event in events where event.type == "batch" {
            guard let id = event.id.flatMap(EventID.init), id.history == position.history, id.version == head + 1 else { break }
            if id.version <= boundary { batches.append(event.data) }
            head = id.version
        }
        return (batches, head)
    }

    /// Wakes every live log read (each answers `503`, to retry elsewhere): the server is shutting down,
    /// and a read waiting up to 20 s would hold its connection past the graceful shutdown's time.
    public func endLongPolls() {
        logPolls.shutDown()
    }
}
