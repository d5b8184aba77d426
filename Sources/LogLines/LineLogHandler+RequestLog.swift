import HTTPCore
import Logging

/// The HTTP server's request lines, written by the handler itself (``HTTPServer`` of EpollRuntime takes
/// it as its `requestLog`): field by field into the line, no metadata dictionary, no `String` per field.
extension LineLogHandler: RequestLog {
    /// A handler that adds metadata of its own (``metadata``, a ``metadataProvider``) writes the line
    /// through ``log(event:)``, which merges it: a text line with the fields its message does not show,
    /// a JSON line with every field.
    public func log(_ line: RequestLogLine) {
        guard writesLinesDirectly else {
            guard logLevel <= .info else { return }
            log(event: LogEvent(level: .info, message: "\(line.message)", metadata: format == .text ? line.unshownMetadata : line.metadata,
                                source: "HTTPServer", file: #fileID, function: #function, line: #line))
            return
        }
        log(level: .info) { line.write(to: &$0) }
    }
}

/// A request's line written into a ``LineLogHandler``'s line: a JSON line with every field, a text
/// line with the fields its message does not show.
extension LogLineWriter: RequestLogLineSink {
    package var isStructured: Bool { format == .json }
}
