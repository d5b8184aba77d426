import ServerSentEvents

/// What a read by position (`GET /feeds/{feed}/log`, issue 54) finds in a feed: worked out on the
/// feed's actor, from what the feed already holds (the snapshot event of its version, its replay
/// window's batch events), so nothing is encoded again.
package enum FeedLogRead: Sendable, Equatable {
    /// The feed does not exist.
    case missing
    /// The start: the snapshot event's data (`{"feed","history","version","sections"}`) at `id`.
    case start(id: EventID, snapshot: [UInt8])
    /// The batches after the position, up to the end asked for: each batch event's data, in order,
    /// with no gap; `head` is the feed's version.
    case batches(history: String, head: Int, batches: [[UInt8]])
    /// The position is of another history, beyond the head, or older than the replay window: the
    /// reader must start over (why, for the answer's detail).
    case startOver(String)
}

extension Feed {
    /// The log read after `position` (nil: the start): the batches of versions `position.version + 1`
    /// through `end(position.version, head)`, taken from the replay window.
    /// - Complexity: O(batches read + their bytes).
    package func logRead(after position: EventID?, end: @Sendable (_ after: Int, _ head: Int) -> Int) -> FeedLogRead {
        guard version > 0 else { return .missing }
        guard let position else {
            let payload = currentSnapshotPayload()
            return .start(id: EventID(history: history, version: version), snapshot: EventFields.parse(payload.bytes).first?.data ?? [])
        }
        guard position.history == history else { return .startOver("the position is of another history of this feed (it was deleted and created again, or its store was emptied)") }
        guard position.version <= version else { return .startOver("the position is beyond this feed's version \(version)") }
        let last = min(version, max(position.version, end(position.version, version)))
        guard last > position.version else { return .batches(history: history, head: version, batches: []) }
        let batches = window.batches
        guard let first = batches.first, first.version <= position.version + 1 else {
            return .startOver("the position is older than the replay window (the last \(replayLimit) versions)")
        }
        let from = position.version + 1 - first.version, through = last - first.version
        guard through < batches.count else { return .startOver("the replay window does not reach version \(last)") }
        var read: [[UInt8]] = []
        read.reserveCapacity(through - from + 1)
        for index in from...through {
            guard batches[index].version == first.version + index, let fields = EventFields.parse(batches[index].payload.bytes).first else {
                return .startOver("the replay window has a gap")
            }
            read.append(fields.data)
        }
        return .batches(history: history, head: version, batches: read)
    }
}
