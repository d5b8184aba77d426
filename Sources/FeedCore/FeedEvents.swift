#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DiffStreamJSON
import ServerSentEvents

/// Encodes a feed's events and documents, each once.
package enum FeedEvents {
    /// `{"feed","history","version","sections"}`; with `id`, the event id follows as `"id"` (the body
    /// of `GET /feeds/{feed}`: a position a client can follow from with `Last-Event-ID`).
    package static func snapshotJSON(feed: String, history: String, version: Int, snapshot: WireSnapshot, id: EventID? = nil) -> [UInt8] {
        var writer = JSONWriter(capacity: 160 + snapshot.numberOfItems * 64)
        writeSnapshot(feed: feed, history: history, version: version, snapshot: snapshot, id: id, into: &writer)
        return writer.bytes
    }

    /// `event: snapshot` with `{"feed":…,"history":"…","version":N,"sections":[…]}`.
    package static func snapshotEvent(feed: String, id: EventID, snapshot: WireSnapshot) -> [UInt8] {
        jsonEvent("snapshot", id: id, capacity: 160 + snapshot.numberOfItems * 64) { writer in
            writeSnapshot(feed: feed, history: id.history, version: id.version, snapshot: snapshot, id: nil, into: &writer)
        }
    }

    private static func writeSnapshot(feed: String, history: String, version: Int, snapshot: WireSnapshot, id: EventID?, into writer: inout JSONWriter) {
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"history\":")
        writer.write(history)
        writer.raw(",\"version\":")
        writer.write(version)
        writer.byte(UInt8(ascii: ","))
        WireCodec.writeSections(snapshot, into: &writer)
        if let id {
            writer.raw(",\"id\":")
            writer.write(id.description)
        }
        writer.byte(UInt8(ascii: "}"))
    }

    /// `event: batch` with `{"feed":…,"history":"…","from":N-1,"version":N,"ops":[…]}`.
    package static func batchEvent(feed: String, id: EventID, batch: WireBatch) -> [UInt8] {
        jsonEvent("batch", id: id, capacity: 160 + batch.operations.count * 80) { writer in
            writer.raw("{\"feed\":")
            writer.write(feed)
            writer.raw(",\"history\":")
            writer.write(id.history)
            writer.raw(",\"from\":")
            writer.write(id.version - 1)
            writer.raw(",\"version\":")
            writer.write(id.version)
            writer.raw(",\"ops\":")
            WireCodec.writeOperations(batch.operations, into: &writer)
            writer.byte(UInt8(ascii: "}"))
        }
    }

    /// The event `name` with `id` whose data is the JSON `body` writes, framed in the buffer it is written
    /// in: `event:`, `id:`, one `data:` line and the blank line, without the copy and line scan of
    /// ``ServerSentEvent/encode(event:id:data:retry:)``. JSON from ``JSONWriter`` holds no line break
    /// (strings escape them, and models are written without whitespace); should one appear all the same,
    /// the event is encoded the general way, line by line (WHATWG HTML §9.2.6), so the result is always
    /// what `encode` makes of the same data.
    /// - Complexity: O(n) in the size of the data.
    private static func jsonEvent(_ name: StaticString, id: EventID, capacity: Int, _ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter(capacity: capacity + 48 + id.history.utf8.count)
        writer.raw("event: ")
        writer.raw(name)
        writer.raw("\nid: ")
        let idStart = writer.bytes.count
        id.write(into: &writer)
        // A history holds no CR, LF or NUL (which `encode` would remove): checked, not assumed.
        let plainID = !writer.bytes[idStart...].contains { $0 == 0x0A || $0 == 0x0D || $0 == 0 }
        writer.raw("\ndata: ")
        let dataStart = writer.bytes.count
        body(&writer)
        let hasLineBreak = writer.bytes.withUnsafeBufferPointer { bytes in
            let data = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[dataStart...])
            guard let base = data.baseAddress, !data.isEmpty else { return false }
            return memchr(base, 0x0A, data.count) != nil || memchr(base, 0x0D, data.count) != nil
        }
        if hasLineBreak || !plainID {
            return ServerSentEvent.encode(event: "\(name)", id: id.description, data: Array(writer.bytes[dataStart...]))
        }
        writer.raw("\n\n")
        return writer.bytes
    }

    /// `event: unauthorized`: the stream's token has expired; the client must come back with a fresh one.
    package static func unauthorizedEvent(feed: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"error\":\"token expired\",\"detail\":\"the token of this stream has expired; reconnect with a fresh one\"}")
        return ServerSentEvent.encode(event: "unauthorized", id: nil, data: writer.bytes)
    }

    /// `events` (one or more encoded events) with `feed@` put before each `id:` value: the form of a
    /// multi-feed stream, whose ids are `NAME@ds1.<history>.<version>`. Only `id:` fields at the start
    /// of a line are changed (data lines start with `data: `, so JSON holding `id: ` is never touched).
    /// - Complexity: O(n) in the size of `events`.
    package static func namingFeedInID(_ events: [UInt8], feed: String) -> [UInt8] {
        let field = Array("id: ".utf8), tag = Array(feed.utf8) + [UInt8(ascii: "@")]
        var output: [UInt8] = []
        output.reserveCapacity(events.count + tag.count * 4)
        var lineStart = 0
        while lineStart < events.count {
            let lineEnd = events[lineStart...].firstIndex(of: 0x0A).map { $0 + 1 } ?? events.count
            if events[lineStart..<lineEnd].starts(with: field) {
                output += field
                output += tag
                output += events[(lineStart + field.count)..<lineEnd]
            } else {
                output += events[lineStart..<lineEnd]
            }
            lineStart = lineEnd
        }
        return output
    }

    /// A batch event as stored before batch data carried `history` (`data: {"feed":…,"from":…`), with
    /// `"history":"…"` put after its feed; any other bytes unchanged.
    /// - Complexity: O(n) in the size of `event`.
    package static func addingHistory(_ event: [UInt8], feed: String, history: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("data: {\"feed\":")
        writer.write(feed)
        let head = writer.bytes
        let old = head + Array(",\"from\":".utf8)
        guard let start = event.indices.first(where: { event[$0...].starts(with: old) }) else { return event }
        var added = JSONWriter()
        added.raw(",\"history\":")
        added.write(history)
        return Array(event[..<(start + head.count)]) + added.bytes + Array(event[(start + head.count)...])
    }

    /// The first block of every event stream: `retry: 2000` and the comment `: heartbeat <seconds>`
    /// announcing the heartbeat interval (written as the `--heartbeat` value: `15`, `0.5`), so a client
    /// can treat about 2.5 intervals of silence as a dead stream.
    package static func announcement(retryMilliseconds: Int, heartbeat: Double) -> [UInt8] {
        let seconds = heartbeat == heartbeat.rounded() && abs(heartbeat) < 1e15 ? String(Int(heartbeat)) : String(heartbeat)
        return Array("retry: \(retryMilliseconds)\n: heartbeat \(seconds)\n\n".utf8)
    }

    /// A feed of a multi-feed stream refused inside it (`notfound`, `forbidden`, `unauthorized`):
    /// `{"feed":…,"error":…,"detail":…}`, no `id:`.
    package static func refusalEvent(_ event: String, feed: String, error: String, detail: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"error\":")
        writer.write(error)
        writer.raw(",\"detail\":")
        writer.write(detail)
        writer.byte(UInt8(ascii: "}"))
        return ServerSentEvent.encode(event: event, id: nil, data: writer.bytes)
    }

    package static func deletedEvent(feed: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.byte(UInt8(ascii: "}"))
        return ServerSentEvent.encode(event: "deleted", id: nil, data: writer.bytes)
    }

    /// The shared store cannot be reached: the feed shows the last state this instance holds
    /// until `available`. `{"feed":…,"detail":…}`, no `id:` (the position does not move).
    package static func unavailableEvent(feed: String, detail: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"detail\":")
        writer.write(detail)
        writer.byte(UInt8(ascii: "}"))
        return ServerSentEvent.encode(event: "unavailable", id: nil, data: writer.bytes)
    }

    /// The shared store is reachable again; what the feed missed follows. `{"feed":…}`, no `id:`.
    package static func availableEvent(feed: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.byte(UInt8(ascii: "}"))
        return ServerSentEvent.encode(event: "available", id: nil, data: writer.bytes)
    }
}
