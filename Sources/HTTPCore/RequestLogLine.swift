import Logging

/// A request's access-log line as its fields: `PUT /feeds/a 201 57B 3ms`, with the metadata `method`,
/// `path`, `status`, `bytes`, `ms` and the handler's own (``HTTPResponse/logMetadata``, say `feed`).
///
/// It is kept as fields until someone writes it, because it is on every request's path: a handler that
/// formats lines itself takes ``sortedFields`` (no dictionary is built), and a swift-log backend gets
/// ``message`` and ``metadata``, made only when its level admits the line.
package struct RequestLogLine: Equatable, Sendable {
    /// As received (`HEAD` stays `HEAD`).
    package var method: String
    /// Without the query string (`HTTPRequest.path`): tokens in a query are never logged.
    package var path: String
    package var status: Int
    /// The body's length (0 for `HEAD`).
    package var bytes: Int
    package var milliseconds: Int
    /// The handler's metadata for the line; the request's own fields win over a key of the same name.
    package var handlerMetadata: Logger.Metadata

    package init(method: String, path: String, status: Int, bytes: Int, milliseconds: Int, handlerMetadata: Logger.Metadata = [:]) {
        self.method = method
        self.path = path
        self.status = status
        self.bytes = bytes
        self.milliseconds = milliseconds
        self.handlerMetadata = handlerMetadata
    }

    /// `PUT /feeds/a 201 57B 3ms`.
    package var message: String {
        "\(method) \(path) \(status) \(bytes)B \(milliseconds)ms"
    }

    /// The line's metadata as swift-log takes it.
    package var metadata: Logger.Metadata {
        var metadata = handlerMetadata
        metadata.reserveCapacity(handlerMetadata.count + 5)
        metadata["method"] = .string(method)
        metadata["path"] = .string(path)
        metadata["status"] = .string(String(status))
        metadata["bytes"] = .string(String(bytes))
        metadata["ms"] = .string(String(milliseconds))
        return metadata
    }

    /// Writes the line into `sink`: the message's parts, then the metadata's fields in key order (the
    /// handler's keys merged in among the request's own), with no dictionary and no `String` per number.
    /// - Complexity: O(m log m) for m keys of the handler's metadata (one, the feed, on a feed's request).
    package func write<Sink: RequestLogLineSink>(to sink: inout Sink) {
        sink.message(method)
        sink.message(" ")
        sink.message(path)
        sink.message(" ")
        sink.message(status)
        sink.message(" ")
        sink.message(bytes)
        sink.message("B ")
        sink.message(milliseconds)
        sink.message("ms")
        let extra = handlerMetadata.count < 2 ? Array(handlerMetadata) : handlerMetadata.sorted { $0.key < $1.key }
        var next = 0
        /// The handler's fields before `key`; one named `key` is dropped (the request's own wins).
        func handlerFields(before key: String, into sink: inout Sink) {
            while next < extra.count && extra[next].key <= key {
                if extra[next].key < key { sink.field(extra[next].key, extra[next].value) }
                next += 1
            }
        }
        handlerFields(before: "bytes", into: &sink)
        sink.field("bytes", bytes)
        handlerFields(before: "method", into: &sink)
        sink.field("method", method)
        handlerFields(before: "ms", into: &sink)
        sink.field("ms", milliseconds)
        handlerFields(before: "path", into: &sink)
        sink.field("path", path)
        handlerFields(before: "status", into: &sink)
        sink.field("status", status)
        for (key, value) in extra[next...] { sink.field(key, value) }
    }
}

/// Where a ``RequestLogLine`` writes itself part by part: a log handler's line writer (`LineLogHandler`'s,
/// in the HTTP server).
package protocol RequestLogLineSink {
    /// A part of the message.
    mutating func message(_ part: String)
    mutating func message(_ number: Int)
    /// A field of the metadata; they come in key order, after the message.
    mutating func field(_ key: String, _ value: String)
    mutating func field(_ key: String, _ number: Int)
    mutating func field(_ key: String, _ value: Logger.MetadataValue)
}
