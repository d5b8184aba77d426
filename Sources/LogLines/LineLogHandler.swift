#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JSONEscaping
import Logging
import Synchronization

/// How ``LineLogHandler`` writes a message.
public enum LogFormat: String, Sendable, CaseIterable {
    /// `2026-11-25T13:41:34Z info [diffstream] GET /feeds/home 200 312B 1ms`: the timestamp, the level,
    /// the label in brackets, the message, then the metadata as `key=value`, sorted by key. A value with
    /// a space, a quote, `=` or nothing in it is written as a JSON string. The HTTP server's request
    /// lines carry only the fields their message does not show (none for that one; the JSON format
    /// keeps every field).
    case text
    /// One JSON object per line, for log collectors: `timestamp`, `level`, `label`, `message`, and
    /// `metadata` (an object of the message's metadata, only when it has some). See docs/configuration.md, "Logs".
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
        let pairs: [(key: String, value: Logger.MetadataValue)]
        if self.metadata.isEmpty && metadataProvider == nil {
            // The common case: nothing to merge.
            pairs = event.metadata.map { $0.count < 2 ? Array($0) : $0.sorted { $0.key < $1.key } } ?? []
        } else {
            var all = self.metadata
            if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
            if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
            pairs = all.sorted { $0.key < $1.key }
        }
        let message = event.message.description
        var line = LogLineWriter(format: format, timestamp: LineLogHandler.timestamp(), level: event.level, label: label,
                                 capacity: 128 + message.utf8.count + 32 * pairs.count)
        LineLogHandler.fill(&line, message: message, sortedPairs: pairs)
        emit(line.finish())
    }

    /// Whether ``log(level:_:)`` writes what `Logger.log` would: true unless this handler adds
    /// metadata of its own (``metadata`` or a ``metadataProvider``), which merges by key.
    public var writesLinesDirectly: Bool { metadata.isEmpty && metadataProvider == nil }

    /// Writes a line that `write` fills in, its message then its fields in key order, with no
    /// `String`s or metadata dictionary in between: for a hot path that holds this handler (the HTTP
    /// server's request lines). Nothing is written below ``logLevel``. Use it only when
    /// ``writesLinesDirectly``; otherwise log through swift-log, which merges the handler's metadata.
    /// - Complexity: O(length of the line).
    public func log(level: Logger.Level, _ write: (inout LogLineWriter) -> Void) {
        guard level >= logLevel else { return }
        var line = LogLineWriter(format: format, timestamp: LineLogHandler.timestamp(), level: level, label: label)
        write(&line)
        emit(line.finish())
    }

    private func emit(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in _ = write(fileDescriptor, buffer.baseAddress, buffer.count) }
    }

    /// One line, newline included, in `format`.
    static func line(format: LogFormat, timestamp: String, level: Logger.Level, label: String, message: String,
                     metadata: Logger.Metadata) -> String {
        var line = LogLineWriter(format: format, timestamp: timestamp, level: level, label: label)
        fill(&line, message: message, sortedPairs: metadata.sorted { $0.key < $1.key })
        return String(decoding: line.finish(), as: UTF8.self)
    }

    private static func fill(_ line: inout LogLineWriter, message: String, sortedPairs pairs: [(key: String, value: Logger.MetadataValue)]) {
        line.message(message)
        for (key, value) in pairs { line.field(key, value) }
    }

    /// `text` as a JSON string literal (RFC 8259 §7).
    static func jsonString(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONStringEscaping.append(text, to: &bytes, escapingDelete: true)
        return String(decoding: bytes, as: UTF8.self)
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
