import Logging

/// Where the HTTP server writes its access log: one ``RequestLogLine`` per request answered, at `info`.
///
/// The default goes through swift-log (``LoggerRequestLog``): a message, with the line's fields as
/// metadata. A log handler that formats lines itself can take them field by field instead, with no
/// metadata dictionary and no `String` per field (every request's path): LogLines' `LineLogHandler`
/// is one, and the `diffstream` command hands it to the server as its request log.
public protocol RequestLog: Sendable {
    /// Writes `line` at `info` (nothing when the log's level is above `info`).
    func log(_ line: RequestLogLine)
}

/// Request lines through swift-log: `PUT /feeds/a 201 57B 3ms` with the fields as metadata, made only
/// when the logger's level admits `info`.
public struct LoggerRequestLog: RequestLog {
    public let logger: Logger
    /// Only the fields the message does not show (``RequestLogLine/unshownMetadata``), for a backend
    /// that writes text lines; false: every field (``RequestLogLine/metadata``), for a structured one.
    public let omitsShownFields: Bool
    /// swift-log's `source` of the lines.
    public let source: String

    public init(_ logger: Logger, omitsShownFields: Bool = false, source: String = "HTTPServer") {
        self.logger = logger
        self.omitsShownFields = omitsShownFields
        self.source = source
    }

    public func log(_ line: RequestLogLine) {
        logger.info("\(line.message)", metadata: omitsShownFields ? line.unshownMetadata : line.metadata, source: source)
    }
}
