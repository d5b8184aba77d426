import Logging

/// A request's access-log line as its fields: `PUT /feeds/a 201 57B 3ms`, with the metadata `method`,
/// `path`, `status`, `bytes`, `ms` and the handler's own (``HTTPResponse/logMetadata``, say `feed`).
///
/// Each field appears once in a text line: the message already shows the method, path, status, bytes
/// and duration, and the path shows the feed of `/feeds/{feed}…`, so a text line adds only the
/// fields it does not show (``unshownMetadata``): `PUT /feeds/a 201 57B 3ms`. A structured line (JSON,
/// a program's own swift-log backend) keeps every field as metadata (``metadata``).
///
/// It is kept as fields until someone writes it, because it is on every request's path: a handler that
/// formats lines itself takes ``sortedFields`` (no dictionary is built), and a swift-log backend gets
/// ``message`` and ``metadata``, made only when its level admits the line.
public struct RequestLogLine: Equatable, Sendable {
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

    /// The handler's metadata that the message does not show: without a key of the request's own
    /// (`method`, `path`, `status`, `bytes`, `ms`), and without `feed` when the path shows it
    /// (`/feeds/news…` for the feed `news`; a name sent percent-encoded is kept). A text line's fields.
    package var unshownMetadata: Logger.Metadata {
        guard !handlerMetadata.isEmpty else { return handlerMetadata }
        return handlerMetadata.filter { !isShownByMessage($0.key, $0.value) }
    }

    /// Whether the message shows the field `key` (the handler's, of value `value`).
    private func isShownByMessage(_ key: String, _ value: Logger.MetadataValue) -> Bool {
        switch key {
        case "method", "path", "status", "bytes", "ms": return true
        case "feed":
            guard case .string(let feed) = value else { return false }
            return Self.path(path, shows: feed)
        default: return false
        }
    }

    /// Whether `path` is `/feeds/<feed>`, or continues it with `/`: the feed's name is in the line as is.
    /// - Complexity: O(length of the name).
    static func path(_ path: String, shows feed: String) -> Bool {
        let prefix = "/feeds/".utf8
        var rest = path.utf8[...]
        guard rest.starts(with: prefix) else { return false }
        rest = rest.dropFirst(prefix.count)
        guard rest.starts(with: feed.utf8) else { return false }
        rest = rest.dropFirst(feed.utf8.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "/")
    }

    /// Writes the line into `sink`: the message's parts, then the metadata's fields in key order (the
    /// handler's keys merged in among the request's own), with no dictionary and no `String` per number.
    /// A sink that is not ``RequestLogLineSink/isStructured`` gets only the fields the message does not
    /// show (``unshownMetadata``).
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
        guard sink.isStructured else {
            let unshown = unshownMetadata
            let extra = unshown.count < 2 ? Array(unshown) : unshown.sorted { $0.key < $1.key }
            for (key, value) in extra { sink.field(key, value) }
            return
        }
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
    /// Whether the line is structured (JSON) and keeps every field as metadata; a text line gets only
    /// the fields its message does not show.
    var isStructured: Bool { get }
    /// A part of the message.
    mutating func message(_ part: String)
    mutating func message(_ number: Int)
    /// A field of the metadata; they come in key order, after the message.
    mutating func field(_ key: String, _ value: String)
    mutating func field(_ key: String, _ number: Int)
    mutating func field(_ key: String, _ value: Logger.MetadataValue)
}
