import ServerSentEvents

/// A feed's replay window: the batches a resuming client is sent instead of a snapshot, the last
/// ``limit`` by version, oldest first. The one rule of how a window is kept (issue 53): a batch is
/// appended, and once the window holds more than `limit + slack` the oldest go, back to `limit`.
/// - `slack` 0 caps it exactly, as a shared store's stream does (`XADD MAXLEN`, the commit script);
/// - a feed keeps `limit / 4` (``feed(limit:)``): it trims every `limit / 4` batches, and its log, told
///   the first version kept (``Append/keepFrom``), deletes rows as rarely. Between trims it holds more
///   than `limit`; ``Feed/missedBatches(since:)`` serves the last `limit` only.
///
/// A window taken from a store (a feed restored or read again) is capped at `limit` exactly.
package struct ReplayWindow {
    package let limit: Int
    /// How many batches past ``limit`` the window may hold before it trims.
    package let slack: Int
    package private(set) var batches: [(version: Int, payload: EventPayload)] = []
    /// The encoded bytes of ``batches``.
    package private(set) var bytes = 0

    package init(limit: Int, slack: Int) {
        self.limit = max(0, limit)
        self.slack = max(0, slack)
    }

    /// A feed's window: trimmed every `limit / 4` batches.
    package static func feed(limit: Int) -> ReplayWindow {
        ReplayWindow(limit: limit, slack: max(0, limit) / 4)
    }

    /// What appending one batch does, worked out before anything changes (and without copying the
    /// window, which cost O(window) per write).
    package struct Append {
        /// How many of the oldest batches go.
        package var dropped: Int
        /// ``ReplayWindow/bytes`` after it.
        package var bytes: Int
        /// The first version the window keeps after it: what a log keeping the same window is told.
        package var keepFrom: Int
    }

    /// What appending the batch of `version`, `count` bytes encoded, does (nothing with `limit` 0).
    package func appending(version: Int, bytes count: Int) -> Append {
        var next = bytes, dropped = 0
        if limit > 0 {
            next += count
            if batches.count + 1 > limit + slack {
                dropped = batches.count + 1 - limit  // ≤ batches.count, as limit ≥ 1
                next -= batches.prefix(dropped).reduce(0) { $0 + $1.payload.bytes.count }
            }
        }
        return Append(dropped: dropped, bytes: next, keepFrom: dropped < batches.count ? batches[dropped].version : version)
    }

    /// Appends the batch `payload` of `version` as `plan` (its ``appending(version:bytes:)``) says.
    package mutating func append(_ version: Int, _ payload: EventPayload, as plan: Append) {
        guard limit > 0 else { return }
        batches.append((version, payload))
        if plan.dropped > 0 { batches.removeFirst(plan.dropped) }  // every `slack` batches: amortised O(1)
        bytes = plan.bytes
    }

    /// Appends the batch `payload` of `version`.
    package mutating func append(_ version: Int, _ payload: EventPayload) {
        append(version, payload, as: appending(version: version, bytes: payload.bytes.count))
    }

    /// The window becomes `stored` (a store's, oldest first), capped at ``limit`` exactly.
    package mutating func replace<Stored: Collection>(with stored: Stored) where Stored.Element == (version: Int, payload: EventPayload) {
        batches = Array(stored.suffix(limit))
        bytes = batches.reduce(0) { $0 + $1.payload.bytes.count }
    }

    package mutating func removeAll() {
        batches = []
        bytes = 0
    }
}
