/// The cursor of live log reads (`…&live=1&cursor=C`), after Electric's (their PR #1656): the number of
/// ``interval``-second intervals since the Unix epoch. Every answer carries one and the reader sends
/// it back on its next live read, so that the URL changes at least every interval: a cache that
/// serves a live answer a little stale (up to its `max-age`) can never hand the reader back the URL
/// it just asked for, which would loop it on the same empty answer.
///
/// When a reader's cursor is already the current interval or later (it was handed one by an answer
/// made in this interval), the answer's cursor is the reader's plus 1 plus a small jitter, so it
/// still moves on, and readers spread over a few URLs rather than one stampede.
package enum PollCursor {
    /// Seconds per interval: the longest live wait.
    package static let interval = 20.0
    /// The jitter's range, in intervals, added past the reader's cursor.
    package static let jitter = 0..<3

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
