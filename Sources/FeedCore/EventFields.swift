import ServerSentEvents

/// The fields of one server-sent event as this server encodes them (``FeedEvents``): its type, its
/// `id:` and its data (several `data:` lines joined with a line feed, as a client joins them). The
/// log route (`GET /feeds/{feed}/log`) answers with the data of the events a feed already holds
/// (its replay window, the batches it broadcasts), so each is encoded once, as an event.
package struct EventFields: Equatable, Sendable {
    package var type: String
    package var id: String?
    package var data: [UInt8]

    package init(type: String, id: String?, data: [UInt8]) {
        self.type = type
        self.id = id
        self.data = data
    }

    /// The events of `bytes` (one or more whole events, each ended by a blank line), in order; comments
    /// and `retry:` are skipped, an event without `data:` is not listed. Lines end with LF (this server's
    /// encoding).
    /// - Complexity: O(n) in the size of `bytes`.
    package static func parse(_ bytes: [UInt8]) -> [EventFields] {
        var events: [EventFields] = []
        var type = "message", id: String?, data: [UInt8] = [], hasData = false
        var lineStart = 0
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.count
            let line = bytes[lineStart..<lineEnd]
            if line.isEmpty {
                if hasData { events.append(EventFields(type: type, id: id, data: data)) }
                type = "message"; id = nil; data = []; hasData = false
            } else if line.starts(with: Self.dataField) {
                if hasData { data.append(0x0A) }
                data += line.dropFirst(Self.dataField.count)
                hasData = true
            } else if line.starts(with: Self.eventField) {
                type = String(decoding: line.dropFirst(Self.eventField.count), as: UTF8.self)
            } else if line.starts(with: Self.idField) {
                id = String(decoding: line.dropFirst(Self.idField.count), as: UTF8.self)
            }
            lineStart = lineEnd + 1
        }
        if hasData { events.append(EventFields(type: type, id: id, data: data)) }
        return events
    }

    private static let dataField = Array("data: ".utf8)
    private static let eventField = Array("event: ".utf8)
    private static let idField = Array("id: ".utf8)
}
