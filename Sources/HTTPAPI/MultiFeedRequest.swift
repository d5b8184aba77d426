import FeedCore
import ViewModelHosting
import HTTPCore

/// What `GET /events?feed=A&feed=B@ID&…` asks for: the feeds in the order listed, each with the
/// position the client holds (the last event id it has for that feed), if any.
///
/// Query parameters are percent-decoded, and `+` is not a space. `feed=NAME@ID` splits at the first
/// `@` (feed names never contain one; `%40` is the same). `Last-Event-ID` (or `?lastEventId=`) of the
/// form `NAME@ID` naming a listed feed overrides that feed's position: it is what a browser's own
/// reconnect sends. Any other parameter is ignored.
package struct MultiFeedRequest: Equatable, Sendable {
    package struct Entry: Equatable, Sendable {
        package var feed: String
        /// The opaque id the client holds (after the `@`), or nil.
        package var position: String?

        package init(feed: String, position: String?) {
            self.feed = feed
            self.position = position
        }
    }

    package var entries: [Entry]

    /// The `400` a request that lists no feed gets.
    package static let noFeed = APIError(.badRequest, "no feed", "no feed: list feeds as ?feed=NAME&feed=NAME…")

    /// Parses a request's target and `Last-Event-ID`.
    /// - Throws: `400` for no feed, more than `limit` feeds, an invalid feed name or a feed listed twice.
    /// - Complexity: O(n) in the length of the query.
    package init(_ request: HTTPRequest, limit: Int) throws(APIError) {
        let query = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first ?? ""
        var entries: [Entry] = []
        var lastEventID = request.headers["Last-Event-ID"]
        var queryLastEventID: String?
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let rawValue = parts.count > 1 ? String(parts[1]) : ""
            let value = PercentDecoding.decode(rawValue) ?? rawValue
            switch PercentDecoding.decode(String(parts[0])) ?? String(parts[0]) {
            case "feed":
                let split = value.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
                entries.append(Entry(feed: String(split[0]), position: split.count > 1 ? String(split[1]) : nil))
            case "lastEventId":
                if queryLastEventID == nil { queryLastEventID = value }
            default:
                break
            }
        }
        guard !entries.isEmpty else { throw Self.noFeed }
        guard entries.count <= limit else {
            var error = APIError(.badRequest, "too many feeds", "at most \(limit) feeds per stream (--max-stream-feeds)")
            error.limit = ("max-stream-feeds", limit)
            throw error
        }
        var seen = Set<String>()
        for entry in entries {
            guard FeedID.isValid(entry.feed) else {
                throw APIError(.badRequest, "invalid feed", "'\(entry.feed.prefix(80))' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)")
            }
            guard seen.insert(entry.feed).inserted else {
                throw APIError(.badRequest, "duplicate feed", "'\(entry.feed)' is listed twice")
            }
        }
        // The header wins over the query parameter, as on the single-feed route.
        lastEventID = lastEventID ?? queryLastEventID
        if let lastEventID, let at = lastEventID.firstIndex(of: "@"),
           let index = entries.firstIndex(where: { $0.feed == lastEventID[..<at] }) {
            entries[index].position = String(lastEventID[lastEventID.index(after: at)...])
        }
        self.entries = entries
    }
}
