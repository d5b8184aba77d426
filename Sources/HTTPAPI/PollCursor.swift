import FeedCore

/// The cursor of live log reads (`…&live=1&cursor=C`), after Electric's (their PR #1656): the number of
/// ``interval``-second intervals since the Unix epoch. Every answer carries one and the reader sends
/// it back on its next live read, so that the URL changes at least every interval: a cache that
/// serves a live answer a little stale (up to its `max-age`) can never hand the reader back the URL
/// it just asked for, which would loop it on the same empty answer.
///
/// When a reader's cursor is already the current interval or later (it was handed one by an answer
/// made in this interval), the answer's cursor is the reader's plus 1 plus a small jitter, so it
/// still moves on. The jitter is drawn from the position and the reader's cursor (``jitter(at:after:)``),
/// not at random: the same on every instance and for every answer to one URL, so that when a cache
/// sends the same request to the origin twice (nginx 1.22 with `proxy_cache_min_uses` 1 does, once
/// per 1,024 requests while an answer is awaited; a CDN may, too), both
/// answers name the same next URL and the readers stay together on it.
package enum PollCursor {
    /// Seconds per interval: the longest live wait.
    package static let interval = 20.0
    /// The jitter's range, in intervals, added past the reader's cursor.
    package static let jitter = 0..<3

    /// The jitter of the answer at `position` to a reader that sent `requested`: FNV-1a of the
    /// position's id and the cursor, in ``jitter``; the same in every process (Swift's `Hasher` is not).
    /// - Complexity: O(length of the id).
    package static func jitter(at position: EventID, after requested: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(position) \(requested)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return jitter.lowerBound + Int(hash % UInt64(jitter.count))
    }

    /// The interval of `now` (seconds since 1970).
    package static func current(now: Double) -> Int {
        Int((now / interval).rounded(.down))
    }

    /// The cursor an answer carries, for a reader that sent `requested` (nil: none) at `now`, with
    /// `jitter` (drawn from ``jitter``) added when the reader's cursor is not behind.
    package static func next(after requested: Int?, now: Double, jitter: Int) -> Int {
        let current = current(now: now)
        guard let requested, requested >= current else { return current }
        return requested + 1 + jitter
    }
}
