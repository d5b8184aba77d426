import Logging
import JSONEscaping

/// Writes one line of ``LineLogHandler`` straight into bytes, in the handler's format: first the
/// message, in parts, then the metadata, one field at a time in key order; ``finish()`` ends it.
///
/// The handler writes every line with it. A hot path that holds the handler writes through it too
/// (``LineLogHandler/log(level:_:)``), so that a line needs no `String` per part and no metadata
/// dictionary: the HTTP server's request lines.
public struct LogLineWriter {
    /// The line so far.
    private(set) var bytes: [UInt8]
    /// The handler's format: a text line or a JSON object.
    public let format: LogFormat
    private var fields = 0

    /// A line's start, up to its message: `<timestamp> <level> [<label>] ` as text, or
    /// `{"timestamp":…,"level":…,"label":…,"message":"` as JSON.
    init(format: LogFormat, timestamp: String, level: Logger.Level, label: String, capacity: Int = 256) {
        self.format = format
        bytes = []
        bytes.reserveCapacity(capacity)
        switch format {
        case .text:
            bytes.append(contentsOf: timestamp.utf8)
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: level.rawValue.utf8)
            bytes.append(contentsOf: " [".utf8)
            bytes.append(contentsOf: label.utf8)
            bytes.append(contentsOf: "] ".utf8)
        case .json:
            bytes.append(contentsOf: "{\"timestamp\":".utf8)
            JSONStringEscaping.append(timestamp, to: &bytes, escapingDelete: true)
            bytes.append(contentsOf: ",\"level\":".utf8)
            JSONStringEscaping.append(level.rawValue, to: &bytes, escapingDelete: true)
            bytes.append(contentsOf: ",\"label\":".utf8)
            JSONStringEscaping.append(label, to: &bytes, escapingDelete: true)
            bytes.append(contentsOf: ",\"message\":\"".utf8)
        }
    }

    /// Appends a part of the message (escaped in a JSON line).
    public mutating func message(_ part: String) {
        switch format {
        case .text: bytes.append(contentsOf: part.utf8)
        case .json: JSONStringEscaping.appendContents(part, to: &bytes, escapingDelete: true)
        }
    }

    /// Appends a number to the message.
    public mutating func message(_ number: Int) {
        Self.appendDecimal(number, to: &bytes)
    }

    /// Appends a metadata field; fields come in key order, each key once, after the whole message.
    public mutating func field(_ key: String, _ value: String) {
        beginField(key)
        switch format {
        case .text:
            if Self.isPlainWord(value) { bytes.append(contentsOf: value.utf8) } else { JSONStringEscaping.append(value, to: &bytes, escapingDelete: true) }
        case .json:
            JSONStringEscaping.append(value, to: &bytes, escapingDelete: true)
        }
    }

    /// Appends a metadata field whose value is a number (a string of its digits, as swift-log's
    /// metadata would hold it).
    public mutating func field(_ key: String, _ number: Int) {
        beginField(key)
        if format == .json { bytes.append(UInt8(ascii: "\"")) }
        Self.appendDecimal(number, to: &bytes)
        if format == .json { bytes.append(UInt8(ascii: "\"")) }
    }

    /// Appends a swift-log metadata value: in a text line its description (a JSON string unless it
    /// is one plain word); in a JSON line strings as strings, arrays and dictionaries as arrays and
    /// objects (keys sorted).
    public mutating func field(_ key: String, _ value: Logger.MetadataValue) {
        if case .string(let text) = value { return field(key, text) }
        switch format {
        case .text: field(key, value.description)
        case .json:
            beginField(key)
            Self.appendJSON(value, to: &bytes)
        }
    }

    /// The line, newline included.
    public mutating func finish() -> [UInt8] {
        switch format {
        case .text:
            bytes.append(0x0A)
        case .json:
            if fields == 0 { bytes.append(UInt8(ascii: "\"")) }  // the message's closing quote
            if fields > 0 { bytes.append(UInt8(ascii: "}")) }  // the metadata object's
            bytes.append(contentsOf: "}\n".utf8)
        }
        return bytes
    }

    private mutating func beginField(_ key: String) {
        switch format {
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: key.utf8)
            bytes.append(UInt8(ascii: "="))
        case .json:
            bytes.append(contentsOf: fields == 0 ? "\",\"metadata\":{".utf8 : ",".utf8)
            JSONStringEscaping.append(key, to: &bytes, escapingDelete: true)
            bytes.append(UInt8(ascii: ":"))
        }
        fields += 1
    }

    /// A text line's value goes bare when it is one plain word: not empty, no space, control
    /// character, quote, `=` or DEL.
    static func isPlainWord(_ value: String) -> Bool {
        !value.isEmpty && !value.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == 0x7F }
    }

    /// - Complexity: O(digits).
    static func appendDecimal(_ number: Int, to bytes: inout [UInt8]) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        guard magnitude >= 10 else { return bytes.append(UInt8(ascii: "0") + UInt8(magnitude)) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: a UInt's 20 digits fit
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            while magnitude > 0 {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            bytes.append(contentsOf: buffer[start...])
        }
    }

    /// A metadata value as JSON: strings as strings, arrays and dictionaries as arrays and objects.
    private static func appendJSON(_ value: Logger.MetadataValue, to bytes: inout [UInt8]) {
        switch value {
        case .string(let text): JSONStringEscaping.append(text, to: &bytes, escapingDelete: true)
        case .stringConvertible(let convertible): JSONStringEscaping.append(convertible.description, to: &bytes, escapingDelete: true)
        case .array(let values):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                appendJSON(element, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            bytes.append(UInt8(ascii: "{"))
            for (index, (key, element)) in entries.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONStringEscaping.append(key, to: &bytes, escapingDelete: true)
                bytes.append(UInt8(ascii: ":"))
                appendJSON(element, to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
