import FeedCore

/// The query of a log read (`GET /feeds/{feed}/log`), in its one spelling, so that a cache's key (the
/// URL) names one answer: nothing, `after=ID`, `after=ID&live=1`, or `after=ID&live=1&cursor=C`, in
/// that order. Anything else is refused (``LogQueryError``, `400` at the edge).
package enum LogQuery: Equatable, Sendable {
    /// No position: the start (the snapshot).
    case start
    /// The batches after `position`, answered at once.
    case after(EventID)
    /// The batches after `position`, waiting for the next when there is none; `cursor` is the last
    /// one the reader was given (nil on its first live read).
    case live(EventID, cursor: Int?)

    /// What every refusal says: the forms there are.
    package static let expected = "expected /feeds/F/log[?after=ID[&live=1[&cursor=C]]]"

    /// The query of `items` (the request's parameters, percent-decoded, in order).
    /// - Throws: ``LogQueryError`` for any other form (unknown, repeated or reordered parameters,
    ///   `live` other than `1`, a malformed id or cursor).
    /// - Complexity: O(length of the query).
    package static func parse(_ items: [(name: String, value: String)]) throws(LogQueryError) -> LogQuery {
        let names = items.map(\.name)
        guard !items.isEmpty else { return .start }
        guard ["after", "live", "cursor"].starts(with: names) else { throw LogQueryError(detail: expected) }
        guard let position = EventID(items[0].value) else {
            throw LogQueryError(detail: "'\(items[0].value.prefix(80))' is not an event id of this server; \(expected)")
        }
        guard items.count > 1 else { return .after(position) }
        guard items[1].value == "1" else { throw LogQueryError(detail: expected) }
        guard items.count > 2 else { return .live(position, cursor: nil) }
        let text = items[2].value
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let cursor = Int(text) else {
            throw LogQueryError(detail: "the cursor '\(text.prefix(40))' is not a number; \(expected)")
        }
        return .live(position, cursor: cursor)
    }

    /// The position, if any.
    package var position: EventID? {
        switch self {
        case .start: nil
        case .after(let position), .live(let position, _): position
        }
    }

    package var isLive: Bool { if case .live = self { true } else { false } }
}

/// A log read's query that is not one of ``LogQuery``'s forms.
package struct LogQueryError: Error, Equatable, Sendable {
    package var detail: String
}
