/// One thing an event stream said, in the order it said it.
public enum SSEMessage: Equatable, Sendable {
    /// A dispatched event (WHATWG HTML §9.2.6 "dispatch the event").
    case event(SSEEvent)
    /// A comment line, without the leading colon and the one space after it (`heartbeat 15`).
    case comment(String)
    /// A valid `retry:` field: the reconnection time in milliseconds.
    case retry(Int)
}

/// An event as the WHATWG algorithm dispatches it.
public struct SSEEvent: Equatable, Sendable {
    /// The `event:` field, `message` when there was none.
    public var type: String
    /// The `data:` lines joined with line feeds.
    public var data: String
    /// The last event ID buffer at dispatch time (it persists from earlier events when this one set none).
    public var lastEventID: String

    public init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// The WHATWG event-stream interpretation (HTML Living Standard §9.2.6 "Interpreting an event stream")
/// as a pure state machine: bytes in (in chunks of any size), messages out. No I/O.
///
/// Lines end with CRLF, LF or CR (a CR at the end of a chunk waits for the next one to tell a CRLF); a
/// leading UTF-8 BOM is dropped; fields are `name: value` with one optional space removed; `id` values
/// containing U+0000 are ignored; `retry` needs ASCII digits only; a blank line dispatches, and an event
/// with an empty data buffer is not dispatched. Comments are reported (the spec ignores them; DiffStream
/// announces its heartbeat interval in one).
public struct SSEParser: Sendable {
    private var line: [UInt8] = []
    private var pendingCR = false
    private var sawFirstBytes = false
    private var dataBuffer = ""
    private var hasData = false
    private var eventType = ""
    /// The last event ID buffer (§9.2.6): kept across events and across reconnections by the caller.
    public private(set) var lastEventID: String

    public init(lastEventID: String = "") {
        self.lastEventID = lastEventID
    }

    /// Feeds a chunk of the stream and returns what it completed.
    /// - Complexity: O(n) in the chunk's length.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [SSEMessage] {
        var out: [SSEMessage] = []
        for byte in bytes {
            if pendingCR {
                pendingCR = false
                if byte == 0x0A { continue }  // the LF of a CRLF
            }
            switch byte {
            case 0x0D:
                pendingCR = true
                endLine(into: &out)
            case 0x0A:
                endLine(into: &out)
            default:
                line.append(byte)
            }
        }
        return out
    }

    /// The stream ended: a partial event is discarded (§9.2.6: "If the file ends in the middle of an
    /// event, before the final empty line, the incomplete event is not dispatched").
    public mutating func reset() {
        line.removeAll(keepingCapacity: true)
        pendingCR = false
        sawFirstBytes = false
        dataBuffer = ""
        hasData = false
        eventType = ""
    }

    private mutating func endLine(into out: inout [SSEMessage]) {
        var bytes = line[...]
        line.removeAll(keepingCapacity: true)
        if !sawFirstBytes {
            sawFirstBytes = true
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        if bytes.isEmpty {
            dispatch(into: &out)
            return
        }
        if bytes.first == UInt8(ascii: ":") {
            var comment = bytes.dropFirst()
            if comment.first == UInt8(ascii: " ") { comment = comment.dropFirst() }
            out.append(.comment(String(decoding: comment, as: UTF8.self)))
            return
        }
        let name: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            name = bytes[..<colon]
            value = bytes[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            name = bytes
            value = []
        }
        let text = String(decoding: value, as: UTF8.self)
        switch String(decoding: name, as: UTF8.self) {
        case "event":
            eventType = text
        case "data":
            if hasData { dataBuffer += "\n" }
            dataBuffer += text
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = text }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }), let milliseconds = Int(text) {
                out.append(.retry(milliseconds))
            }
        default:
            break  // ignored (§9.2.6)
        }
    }

    private mutating func dispatch(into out: inout [SSEMessage]) {
        defer {
            dataBuffer = ""
            hasData = false
            eventType = ""
        }
        guard hasData else { return }
        out.append(.event(SSEEvent(type: eventType.isEmpty ? "message" : eventType, data: dataBuffer, lastEventID: lastEventID)))
    }
}
