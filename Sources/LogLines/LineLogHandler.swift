#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Synchronization

/// How ``LineLogHandler`` writes a message.
public enum LogFormat: String, Sendable, CaseIterable {
    /// `2026-11-25T13:41:34Z info [diffstream] GET /feeds/home 200 312B 1ms bytes=312 ms=1 status=200`:
    /// the timestamp, the level, the label in brackets, the message, then the metadata as `key=value`,
    /// sorted by key. A value with a space, a quote, `=` or nothing in it is written as a JSON string.
    case text
    /// One JSON object per line, for log collectors: `timestamp`, `level`, `label`, `message`, and
    /// `metadata` (an object of the message's metadata, only when it has some). See the README's "Logs".
    case json
}

/// A swift-log handler that writes each message as one line to a file descriptor (standard error by
/// default), in ``LogFormat/text`` or ``LogFormat/json``.
///
/// Each line is written with a single `write(2)`, so lines from several threads never interleave.
public struct LineLogHandler: LogHandler {
    /// The least severe level written.
    public var logLevel: Logger.Level
    /// Metadata added to every message of this handler's loggers.
    public var metadata: Logger.Metadata = [:]
    /// Adds metadata to every message as it is logged (task-local values, for instance).
    public var metadataProvider: Logger.MetadataProvider?
    /// The logger's label, written with each line.
    public let label: String
    /// Text or JSON.
    public let format: LogFormat
    private let fileDescriptor: Int32

    /// A handler for the logger labelled `label`, writing to `fileDescriptor` (2: standard error).
    public init(label: String, format: LogFormat = .text, level: Logger.Level = .info, fileDescriptor: Int32 = 2,
                metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.format = format
        self.logLevel = level
        self.fileDescriptor = fileDescriptor
        self.metadataProvider = metadataProvider
    }

    /// One of this handler's metadata values.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line (swift-log checks the level before calling this).
    public func log(event: LogEvent) {
        let merged: Logger.Metadata
        if self.metadata.isEmpty && metadataProvider == nil {
            merged = event.metadata ?? [:]  // the common case: nothing to merge (a request's log line)
        } else {
            var all = self.metadata
            if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
            if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
            merged = all
        }
        var text = LineLogHandler.line(format: format, timestamp: LineLogHandler.timestamp(), level: event.level, label: label,
                                       message: event.message.description, metadata: merged)
        text.withUTF8 { bytes in _ = write(fileDescriptor, bytes.baseAddress, bytes.count) }
    }

    /// One line, newline included, in `format`.
    static func line(format: LogFormat, timestamp: String, level: Logger.Level, label: String, message: String,
                     metadata: Logger.Metadata) -> String {
        let pairs = metadata.sorted { $0.key < $1.key }
        switch format {
        case .text:
            var text = "\(timestamp) \(level) [\(label)] \(message)"
            for (key, value) in pairs {
                text += " \(key)=\(textValue(value))"
            }
            return text + "\n"
        case .json:
            var text = "{\"timestamp\":\(jsonString(timestamp)),\"level\":\(jsonString(level.rawValue)),\"label\":\(jsonString(label)),\"message\":\(jsonString(message))"
            if !pairs.isEmpty {
                text += ",\"metadata\":{" + pairs.map { "\(jsonString($0.key)):\(jsonValue($0.value))" }.joined(separator: ",") + "}"
            }
            return text + "}\n"
        }
    }

    /// A metadata value in a text line: bare if it is one plain word, else a JSON string.
    private static func textValue(_ value: Logger.Metadata.Value) -> String {
        let plain = value.description
        let needsQuotes = plain.isEmpty || plain.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == 0x7F }
        return needsQuotes ? jsonString(plain) : plain
    }

    /// A metadata value as JSON: strings as strings, arrays and dictionaries as JSON arrays and objects.
    private static func jsonValue(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): jsonString(text)
        case .stringConvertible(let convertible): jsonString(convertible.description)
        case .array(let values): "[" + values.map(jsonValue).joined(separator: ",") + "]"
        case .dictionary(let entries):
            "{" + entries.sorted { $0.key < $1.key }.map { "\(jsonString($0.key)):\(jsonValue($0.value))" }.joined(separator: ",") + "}"
        }
    }

    /// `text` as a JSON string literal (RFC 8259 §7).
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The last second's timestamp: lines in the same second share it.
    private static let lastTimestamp = Mutex<(second: Int, text: String)>((-1, ""))

    /// Now, as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
    static func timestamp() -> String {
        var now = time(nil)
        if let cached = lastTimestamp.withLock({ $0.second == Int(now) ? $0.text : nil }) { return cached }
        let text = format(&now)
        lastTimestamp.withLock { $0 = (Int(now), text) }
        return text
    }

    private static func format(_ now: inout time_t) -> String {
        var parts = tm()
        gmtime_r(&now, &parts)
        func pad(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec))Z"
    }
}
