import DiffStreamJSON
import FeedCore

/// The body of a log read's `200` (`GET /feeds/{feed}/log`):
/// `{"feed","history","snapshot"?,"batches":[…],"next","upToDate","cursor"}`. The snapshot and the
/// batches are the data of the feed's own events, copied in as they were encoded.
package struct LogAnswer: Equatable, Sendable {
    package var feed: String
    package var history: String
    /// The snapshot event's data: only in the answer to the start.
    package var snapshot: [UInt8]?
    /// Each batch event's data, in order.
    package var batches: [[UInt8]]
    /// Where the reader reads next.
    package var next: EventID
    package var upToDate: Bool
    package var cursor: Int

    package init(feed: String, history: String, snapshot: [UInt8]? = nil, batches: [[UInt8]], next: EventID, upToDate: Bool, cursor: Int) {
        self.feed = feed
        self.history = history
        self.snapshot = snapshot
        self.batches = batches
        self.next = next
        self.upToDate = upToDate
        self.cursor = cursor
    }

    /// The JSON body, followed by a line feed.
    /// - Complexity: O(bytes of the snapshot and batches).
    package var json: [UInt8] {
        var writer = JSONWriter(capacity: 160 + (snapshot?.count ?? 0) + batches.reduce(0) { $0 + $1.count + 1 })
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"history\":")
        writer.write(history)
        if let snapshot {
            writer.raw(",\"snapshot\":")
            writer.bytes += snapshot
        }
        writer.raw(",\"batches\":[")
        for (index, batch) in batches.enumerated() {
            if index > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.bytes += batch
        }
        writer.raw("],\"next\":")
        writer.write(next.description)
        writer.raw(upToDate ? ",\"upToDate\":true,\"cursor\":" : ",\"upToDate\":false,\"cursor\":")
        writer.write(String(cursor))
        writer.raw("}\n")
        return writer.bytes
    }
}
