import Logging

/// What the connection needs to know about the request it is answering, fixed when it is dispatched.
package struct RequestInfo: Equatable, Sendable {
    /// As received (`HEAD` stays `HEAD` here; the handler sees `GET`).
    package var method: String
    package var path: String
    /// When the request was dispatched (monotonic seconds), for the log line's duration.
    package var start: Double
    package var keepAlive: Bool
    /// A HEAD request: the head of the GET response, no body (RFC 9110 §9.3.2).
    package var head: Bool
    /// The client accepts gzip and compression is on.
    package var gzip: Bool
    /// The `Last-Event-ID` a resuming event-stream client sent (for the log), at most 80 characters.
    package var lastEventID: String? = nil

    package static func unknown(at now: Double, path: String = "-") -> RequestInfo {
        RequestInfo(method: "-", path: path, start: now, keepAlive: false, head: false, gzip: false)
    }
}

/// A handler's response made ready for the wire, off the loop thread: the body compressed if the client
/// takes gzip and it is worth it, `Vary`, `Content-Length` and `Content-Encoding` set. Only the
/// `Connection` field (which depends on the connection's state) and `Date` are left to the head
/// encoder on the loop.
package struct PreparedResponse: Sendable {
    package var status: HTTPStatus
    package var headers: HTTPHeaders
    /// The body to send (empty for HEAD); its length is in `Content-Length` when it has one.
    package var body: [UInt8]
    /// The body length before HEAD removed it (for the log line).
    package var bodyLength: Int
    /// The handler asked for `Connection: close`.
    package var close: Bool
    /// Set for an event stream (not for HEAD of one): called with the stream once the head is queued.
    package var stream: (@Sendable (any EventSink) -> Void)?
    /// The handler's metadata for this request's log lines.
    package var logMetadata: Logger.Metadata = [:]
    /// An event stream's events are gzipped (the client accepts it and compression is on): only then is
    /// an event deflated for it.
    package var gzipStream = false

    /// Prepares `response` for the request described by `info`. Pure; may gzip, so it runs before the
    /// bytes reach a loop.
    /// - Complexity: O(n) in the body size.
    package static func prepare(_ response: HTTPResponse, for info: RequestInfo, compressAbove minimumCompressedSize: Int) -> PreparedResponse {
        var headers = response.headers
        let close = headers.containsToken("close", in: "Connection")
        headers.remove("Connection")
        switch response.body {
        case .bytes(var body):
            let type = headers["Content-Type"] ?? ""
            if isCompressible(type) && headers["Content-Encoding"] == nil {
                if !headers.values("Vary").contains(where: { $0.lowercased().contains("accept-encoding") }) {
                    headers.add("Vary", "Accept-Encoding")
                }
                if info.gzip && body.count >= minimumCompressedSize {
                    body = Gzip.compress(body)
                    headers.set("Content-Encoding", "gzip")
                    // The gzip variant is another representation: its own strong tag (RFC 9110 §8.8.3).
                    if let tag = headers["ETag"] { headers.set("ETag", EntityTag.gzipVariant(of: tag)) }
                }
            }
            let status = response.status.code
            if status != 304 && status != 204 && !(100..<200).contains(status) {
                headers.set("Content-Length", String(body.count))
            }
            return PreparedResponse(status: response.status, headers: headers, body: info.head ? [] : body, bodyLength: body.count,
                                    close: close, stream: nil, logMetadata: response.logMetadata)
        case .stream(let start):
            if info.gzip && !info.head { headers.set("Content-Encoding", "gzip") }
            headers.add("Vary", "Accept-Encoding")
            return PreparedResponse(status: response.status, headers: headers, body: [], bodyLength: 0, close: true,
                                    stream: info.head ? nil : start, logMetadata: response.logMetadata, gzipStream: info.gzip && !info.head)
        }
    }

    /// Whether a body of this media type gains from gzip: text, JSON, JavaScript, SVG and XML. Media
    /// types are case-insensitive (RFC 9110 §8.3.1): compared byte by byte, ASCII letters folded.
    package static func isCompressible(_ contentType: String) -> Bool {
        let type = contentType.utf8
        func starts(with prefix: StaticString) -> Bool {
            let count = prefix.utf8CodeUnitCount
            guard type.count >= count else { return false }
            var index = type.startIndex
            for offset in 0..<count {
                let byte = type[index], lower = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                guard lower == prefix.utf8Start[offset] else { return false }
                index = type.index(after: index)
            }
            return true
        }
        return starts(with: "text/") || starts(with: "application/json") || starts(with: "application/javascript")
            || starts(with: "image/svg+xml") || starts(with: "application/xml")
    }
}

/// Encodes a response's status line and header section (RFC 9112 §4 and §5). Pure.
package enum ResponseHead {
    /// `HTTP/1.1 <code> <reason>`, `Date`, `Server`, the fields in order, `Connection`, and the empty
    /// line, followed by `body`: one buffer, sized once, for the one write of head and body.
    /// - Complexity: O(size of the head + body).
    package static func encode(status: HTTPStatus, headers: HTTPHeaders, keepAlive: Bool, date: String, body: [UInt8] = []) -> [UInt8] {
        var size = 64 + status.reason.utf8.count + date.utf8.count + body.count
        for field in headers { size += field.name.utf8.count + field.value.utf8.count + 4 }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        bytes.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status.code, to: &bytes)
        bytes.append(UInt8(ascii: " "))
        append(status.reason, to: &bytes)
        bytes.append(contentsOf: "\r\nDate: ".utf8)
        append(date, to: &bytes)
        bytes.append(contentsOf: "\r\nServer: diffstream\r\n".utf8)
        for field in headers {
            append(field.name, to: &bytes)
            bytes.append(contentsOf: ": ".utf8)
            append(field.value, to: &bytes)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: (keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n").utf8)
        bytes.append(contentsOf: body)
        return bytes
    }

    /// A string's UTF-8, copied from its contiguous storage (native strings have it) in one go.
    private static func append(_ string: String, to bytes: inout [UInt8]) {
        var string = string
        string.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// `value`'s decimal digits (a status code: non-negative).
    private static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        guard value >= 10 else { bytes.append(UInt8(ascii: "0") + UInt8(clamping: max(0, value))); return }
        appendDecimal(value / 10, to: &bytes)
        bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
    }
}
