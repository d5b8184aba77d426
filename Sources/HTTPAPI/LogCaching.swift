/// The `Cache-Control` of a log read's answer (`GET /feeds/{feed}/log`): what a shared cache (nginx, a
/// CDN) may keep, and for how long. Only public feeds are cached; the other answers are never stored.
package enum LogCaching: Equatable, Sendable {
    /// A whole chunk: its batches never change (a new history has other ids, so other URLs).
    case immutable
    /// The start, a chunk up to the head, an empty answer, a live answer: 5 s, under the live wait
    /// (20 s), so that a cache collapses the waiting readers of a URL into one request.
    case short
    /// A feed that needs a token: its answers are the reader's own, never stored by anyone.
    case privateNoStore
    /// An error, of any feed: never stored, so that a `404` cannot outlive the feed's creation.
    case noStore

    /// The header's value.
    package var header: String {
        switch self {
        case .immutable: "public, max-age=31536000, immutable"
        case .short: "public, max-age=5"
        case .privateNoStore: "private, no-store"
        case .noStore: "no-store"
        }
    }

    /// The caching of a `200` answer: never stored for a feed that needs a token; immutable for a
    /// whole chunk read without waiting; else short.
    package static func of(needsToken: Bool, live: Bool, complete: Bool) -> LogCaching {
        if needsToken { return .privateNoStore }
        return complete && !live ? .immutable : .short
    }
}
