/// A strict, incremental HTTP/1.1 request parser (RFC 9112): feed it bytes as they arrive with
/// ``append(_:)``, then call ``next()`` until it answers `.needMore`.
///
/// It is a pure state machine: no sockets, no clocks. After an error it stays failed; the connection
/// answers the error and closes (a request whose framing is in doubt cannot be followed by another
/// one safely: that is how request smuggling works).
public struct HTTPRequestParser: Sendable {
    public enum Event: Equatable, Sendable {
        /// A complete request, body included.
        case request(HTTPRequest)
        /// The head of a request with `Expect: 100-continue` is complete and its body is still to come.
        case expectContinue
        /// Nothing more can be parsed until more bytes arrive.
        case needMore
        /// The bytes are not an acceptable request.
        case error(HTTPParseError)
    }

    /// The states that hold a request are `indirect` (boxed while a body is read): the parser lives
    /// inline in every connection, idle subscribers included, and a request inline would add about
    /// 100 bytes to each.
    private enum State: Sendable {
        case head
        indirect case body(Pending, remaining: Int)
        indirect case chunkSize(Pending)
        indirect case chunkData(Pending, remaining: Int)
        indirect case chunkDataEnd(Pending)
        indirect case trailers(Pending)
        case failed(HTTPParseError)
        /// Failed after the head was parsed (a body too large, a framing refused): the head is kept
        /// for the log line (``refusedHead``).
        indirect case failedAfterHead(HTTPParseError, HTTPRequest)
    }

    /// A request whose head is parsed and whose body is being read.
    private struct Pending: Sendable {
        package var request: HTTPRequest
        package var body: [UInt8]
    }

    /// The limits, shared by reference: every connection of a server has the same ones, and an idle
    /// subscriber should not carry its own copy (about 90 bytes).
    private let sharedLimits: SharedLimits
    public var limits: HTTPLimits { sharedLimits.value }
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanned = 0
    private var state = State.head
    private var continueSent = false

    /// Limits that many parsers share (one allocation, not one copy each).
    package final class SharedLimits: Sendable {
        package let value: HTTPLimits
        package init(_ value: HTTPLimits) { self.value = value }
    }

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.init(sharedLimits: SharedLimits(limits))
    }

    package init(sharedLimits: SharedLimits) {
        self.sharedLimits = sharedLimits
    }

    /// Bytes received but not yet consumed by a complete request.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Whether a request has started arriving (head or body) but is not complete.
    public var isMidRequest: Bool {
        switch state {
        case .head: bufferedByteCount > 0
        case .failed, .failedAfterHead: false
        default: true
        }
    }

    /// Whether the head is complete and the body is being read.
    public var isReadingBody: Bool {
        switch state {
        case .head, .failed, .failedAfterHead: false
        default: true
        }
    }

    /// The method and path (as sent, without the query: ``HTTPRequest/rawPath``) of the request whose
    /// head was parsed and whose body is being read, or was refused (a body over the limit, a framing
    /// refused): what its log line shows. Nil before a head is complete, and after an error in one.
    public var refusedHead: (method: String, path: String)? {
        let request: HTTPRequest
        switch state {
        case .head, .failed: return nil
        case .body(let pending, _), .chunkSize(let pending), .chunkData(let pending, _), .chunkDataEnd(let pending), .trailers(let pending):
            request = pending.request
        case .failedAfterHead(_, let head):
            request = head
        }
        return (request.method, request.rawPath)
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Frees the buffer's memory, dropping any bytes not yet parsed (for a connection that will parse
    /// nothing more, such as an open event stream).
    public mutating func releaseBuffer() {
        buffer = []
        start = 0
        scanned = 0
    }

    /// Parses as far as the buffered bytes allow.
    public mutating func next() -> Event {
        while true {
            switch state {
            case .failed(let error), .failedAfterHead(let error, _):
                return .error(error)
            case .head:
                guard let result = parseHead() else { return checkHeadLimits() }
                switch result {
                case .failure(let error): return fail(error)
                case .success(let (pending, framing)):
                    if let event = beginBody(pending, framing) { return event }
                }
            case .body(var pending, let remaining):
                let available = min(remaining, buffer.count - start)
                pending.body.append(contentsOf: buffer[start..<start + available])
                start += available
                if available == remaining {
                    state = .head
                    return complete(pending)
                }
                state = .body(pending, remaining: remaining - available)
                return .needMore
            case .chunkSize(let pending):
                guard let line = takeLine(limit: 1024) else {
                    return bufferedByteCount > 1024 ? fail(.init(.badRequest, "chunk size line too long"), after: pending) : .needMore
                }
                guard let line = line.success else { return fail(line.failure!, after: pending) }
                let sizeText = line.split(separator: UInt8(ascii: ";"), maxSplits: 1, omittingEmptySubsequences: false)[0]
                // chunk-size = 1*HEXDIG (RFC 9112 §7.1): no sign, no spaces; at most 15 digits fit an Int.
                guard !sizeText.isEmpty, sizeText.count <= 15, sizeText.allSatisfy(\.isHexDigit),
                      let size = Int(String(decoding: sizeText, as: UTF8.self), radix: 16) else {
                    return fail(.init(.badRequest, "invalid chunk size"), after: pending)
                }
                if pending.body.count + size > limits.maxBodyBytes {
                    return fail(.init(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes"), after: pending)
                }
                state = size == 0 ? .trailers(pending) : .chunkData(pending, remaining: size)
            case .chunkData(var pending, let remaining):
                let available = min(remaining, buffer.count - start)
                pending.body.append(contentsOf: buffer[start..<start + available])
                start += available
                if available < remaining {
                    state = .chunkData(pending, remaining: remaining - available)
                    return .needMore
                }
                state = .chunkDataEnd(pending)
            case .chunkDataEnd(let pending):
                guard buffer.count - start >= 2 else { return .needMore }
                guard buffer[start] == 0x0D, buffer[start + 1] == 0x0A else { return fail(.init(.badRequest, "chunk data not followed by CRLF"), after: pending) }
                start += 2
                state = .chunkSize(pending)
            case .trailers(let pending):
                // Trailer fields are read and dropped (RFC 9112 §7.1.2); an empty line ends them.
                guard let line = takeLine(limit: limits.maxHeaderBytes) else {
                    return bufferedByteCount > limits.maxHeaderBytes ? fail(.init(.headerFieldsTooLarge, "trailer section too large"), after: pending) : .needMore
                }
                guard let line = line.success else { return fail(line.failure!, after: pending) }
                if line.isEmpty {
                    state = .head
                    return complete(pending)
                }
            }
        }
    }

    // MARK: Head

    private mutating func fail(_ error: HTTPParseError) -> Event {
        state = .failed(error)
        return .error(error)
    }

    /// Fails the request whose head `pending` holds: its head is kept (``refusedHead``), its body dropped.
    private mutating func fail(_ error: HTTPParseError, after pending: Pending) -> Event {
        state = .failedAfterHead(error, pending.request)
        return .error(error)
    }

    private mutating func complete(_ pending: consuming Pending) -> Event {
        var request = pending.request
        request.body = pending.body
        continueSent = false
        return .request(request)
    }

    /// With no complete head yet: is what we have already too long?
    private mutating func checkHeadLimits() -> Event {
        let available = buffer.count - start
        if let lineEnd = firstCRLF(from: start) {
            let limit = lineEnd - start > limits.maxRequestLine ? limits.requestLineLimit(buffer[start..<lineEnd], complete: true) ?? limits.maxRequestLine : limits.maxRequestLine
            if lineEnd - start > limit { return fail(.init(.uriTooLong, "the request line is longer than \(limit) bytes")) }
            if available - (lineEnd + 2 - start) > limits.maxHeaderBytes + 2 {
                return fail(.init(.headerFieldsTooLarge, "the header section is larger than \(limits.maxHeaderBytes) bytes"))
            }
        } else if available > limits.maxRequestLine + 1 {
            // + 1: a line of exactly the limit may have its CR here and its LF still on the way (found by fuzzing).
            // A path with a longer limit (`/events`) may go on up to it; until its path is all there, the longest.
            let limit = limits.requestLineLimit(buffer[start..<buffer.count], complete: false) ?? limits.longestRequestLine
            if available > limit + 1 { return fail(.init(.uriTooLong, "the request line is longer than \(limit) bytes")) }
        }
        return .needMore
    }

    /// The first LF at or after `index` that is not preceded by CR.
    private func firstBareLF(from index: Int) -> Int? {
        var index = index
        while index < buffer.count {
            if buffer[index] == 0x0A && (index == start || buffer[index - 1] != 0x0D) { return index }
            index += 1
        }
        return nil
    }

    private func firstCRLF(from index: Int) -> Int? {
        var index = index
        while index + 1 < buffer.count {
            if buffer[index] == 0x0D && buffer[index + 1] == 0x0A { return index }
            index += 1
        }
        return nil
    }

    /// Finds the end of the head (CRLF CRLF) and parses it, or returns nil if it is not complete.
    private mutating func parseHead() -> Result<(Pending, BodyFraming), HTTPParseError>? {
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while buffer.count - start >= 2, buffer[start] == 0x0D, buffer[start + 1] == 0x0A { start += 2 }
        if scanned < start { scanned = start }
        let from = max(start, scanned - 3)
        let end: Int? = buffer.withUnsafeBufferPointer { bytes in
            // `index` is where a CRLF CRLF would end; a byte that is neither CR nor LF rules out every
            // CRLF CRLF that ends at it or at one of the next three bytes.
            var index = from + 3
            while index < bytes.count {
                let byte = bytes[index]
                if byte > 0x0D {
                    index += 4
                    continue
                }
                if byte == 0x0A, bytes[index - 1] == 0x0D, bytes[index - 2] == 0x0A, bytes[index - 3] == 0x0D { return index - 3 }
                index += 1
            }
            return nil
        }
        guard let headEnd = end else {
            // No complete head yet, so every buffered byte belongs to it. RFC 9112 §2.2 lets a server
            // accept a bare LF as a line terminator; this one refuses it, as soon as it arrives rather
            // than waiting for a CRLF CRLF that may never come.
            if firstBareLF(from: max(start, scanned)) != nil {
                scanned = buffer.count
                return .failure(.init(.badRequest, "bare LF in the request head"))
            }
            scanned = buffer.count
            return nil
        }
        let headStart = start
        start = headEnd + 4
        scanned = start
        let limits = limits
        return buffer.withUnsafeBufferPointer { bytes in
            Self.parseHead(UnsafeBufferPointer(rebasing: bytes[headStart..<headEnd]), limits: limits)
        }
    }

    /// How the body is framed, as far as the header fields tell it while they are parsed.
    private enum BodyFraming {
        /// Neither Content-Length nor Transfer-Encoding: no body.
        case none
        /// One Content-Length field of 1 to 18 digits and no Transfer-Encoding: that many bytes.
        case length(Int)
        /// Anything else (repeats, lists, Transfer-Encoding, invalid values): decided from the fields.
        case fromFields
    }

    private static func parseHead(_ head: UnsafeBufferPointer<UInt8>, limits: HTTPLimits) -> Result<(Pending, BodyFraming), HTTPParseError> {
        // Every line ends in CRLF: no bare CR or LF, and no NUL anywhere. One pass finds the end of
        // the request line and counts the field lines (one per CRLF).
        var requestLineEnd = head.count
        var fieldLineCount = 0
        var index = 0
        while index < head.count {
            let byte = head[index]
            if byte > 0x0D {
                index += 1
                continue
            }
            if byte == 0x0D {
                guard index + 1 < head.count, head[index + 1] == 0x0A else {
                    return .failure(.init(.badRequest, "bare CR in the request head"))
                }
                if fieldLineCount == 0 { requestLineEnd = index }
                fieldLineCount += 1
                index += 2
                continue
            }
            if byte == 0x0A { return .failure(.init(.badRequest, "bare LF in the request head")) }
            if byte == 0 { return .failure(.init(.badRequest, "NUL byte in the request head")) }
            index += 1
        }

        let lineLimit = requestLineEnd > limits.maxRequestLine
            ? limits.requestLineLimit(ArraySlice(head[..<requestLineEnd]), complete: true) ?? limits.maxRequestLine : limits.maxRequestLine
        if requestLineEnd > lineLimit {
            return .failure(.init(.uriTooLong, "the request line is longer than \(lineLimit) bytes"))
        }
        let headerBytes = head.count - requestLineEnd
        if headerBytes > limits.maxHeaderBytes {
            return .failure(.init(.headerFieldsTooLarge, "the header section is larger than \(limits.maxHeaderBytes) bytes"))
        }
        if fieldLineCount > limits.maxHeaderCount {
            return .failure(.init(.headerFieldsTooLarge, "more than \(limits.maxHeaderCount) header fields"))
        }

        // Request line: method SP request-target SP HTTP-version (RFC 9112 §3).
        var firstSpace = -1
        var secondSpace = -1
        index = 0
        while index < requestLineEnd {
            if head[index] == UInt8(ascii: " ") {
                if firstSpace < 0 {
                    firstSpace = index
                } else if secondSpace < 0 {
                    secondSpace = index
                } else {
                    return .failure(.init(.badRequest, "malformed request line"))
                }
            }
            index += 1
        }
        guard secondSpace >= 0 else { return .failure(.init(.badRequest, "malformed request line")) }
        let methodBytes = UnsafeBufferPointer(rebasing: head[..<firstSpace])
        let targetBytes = UnsafeBufferPointer(rebasing: head[(firstSpace + 1)..<secondSpace])
        let versionBytes = UnsafeBufferPointer(rebasing: head[(secondSpace + 1)..<requestLineEnd])
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(isTokenByte) else { return .failure(.init(.badRequest, "invalid method")) }
        guard !targetBytes.isEmpty, targetBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.init(.badRequest, "invalid request target"))
        }
        // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3): 1.0 and 1.1 are spoken, any other is a 505.
        guard versionBytes.count == 8, Self.hasPrefix(versionBytes, "HTTP/"), versionBytes[5].isDigit,
              versionBytes[6] == UInt8(ascii: "."), versionBytes[7].isDigit
        else { return .failure(.init(.badRequest, "invalid HTTP version")) }
        let version: HTTPVersion
        switch (versionBytes[5], versionBytes[7]) {
        case (UInt8(ascii: "1"), UInt8(ascii: "1")): version = .http11
        case (UInt8(ascii: "1"), UInt8(ascii: "0")): version = .http10
        default: return .failure(.init(.httpVersionNotSupported, "only HTTP/1.0 and HTTP/1.1 are supported"))
        }
        let method = String(decoding: methodBytes, as: UTF8.self)
        var target = String(decoding: targetBytes, as: UTF8.self)
        // RFC 9112 §3.2: origin-form, absolute-form (reduced to its path), or asterisk-form for OPTIONS.
        // (The target is all visible ASCII, so its bytes answer what its characters would.)
        if Self.hasPrefix(targetBytes, "http://") || Self.hasPrefix(targetBytes, "https://") {
            let afterScheme = target.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
            target = afterScheme.count == 4 ? "/" + afterScheme[3] : "/"
        } else if targetBytes.count == 1 && targetBytes[0] == UInt8(ascii: "*") {
            guard method == "OPTIONS" else { return .failure(.init(.badRequest, "asterisk-form is only for OPTIONS")) }
        } else if targetBytes[0] != UInt8(ascii: "/") {
            return .failure(.init(.badRequest, "the request target must start with '/'"))
        }

        // Header fields: field-name ":" OWS field-value OWS (RFC 9112 §5). Each line is read in one
        // pass: the name up to the colon, then the value up to the CR, noting where its optional
        // whitespace ends. The fields that frame the message are counted on the way, by their bytes
        // (a valid name is all ASCII, so folding ASCII letters is exactly `HTTPHeaders`' comparison).
        var headers = HTTPHeaders()
        headers.reserveCapacity(fieldLineCount)
        var hostCount = 0
        var transferEncodingCount = 0
        var contentLengthCount = 0
        var contentLength: Int?
        var lineStart = requestLineEnd + 2
        while lineStart < head.count {
            let first = head[lineStart]
            if first == 0x0D {  // an empty line (cannot occur: the head ends before one)
                lineStart += 2
                continue
            }
            if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
                return .failure(.init(.badRequest, "obsolete line folding is not accepted"))
            }
            var colon = lineStart
            var nameIsToken = true
            while colon < head.count, head[colon] != UInt8(ascii: ":"), head[colon] != 0x0D {
                if !isTokenByte(head[colon]) { nameIsToken = false }
                colon += 1
            }
            guard colon < head.count, head[colon] == UInt8(ascii: ":") else {
                return .failure(.init(.badRequest, "header line without a colon"))
            }
            guard colon > lineStart, nameIsToken else {
                return .failure(.init(.badRequest, "invalid header field name"))
            }
            var lineEnd = colon + 1
            var valueStart = -1
            var valueEnd = lineEnd
            var isASCII = true
            while lineEnd < head.count {
                let byte = head[lineEnd]
                if byte == 0x0D { break }
                guard byte == 0x09 || (byte >= 0x20 && byte != 0x7F) else {
                    return .failure(.init(.badRequest, "invalid character in a header field value"))
                }
                if byte >= 0x80 { isASCII = false }
                if byte != UInt8(ascii: " ") && byte != 0x09 {
                    if valueStart < 0 { valueStart = lineEnd }
                    valueEnd = lineEnd + 1
                }
                lineEnd += 1
            }
            let name = UnsafeBufferPointer(rebasing: head[lineStart..<colon])
            let value: String
            if !isASCII {
                // Beyond ASCII a space may begin or end a grapheme with its neighbour: trim characters.
                value = String(decoding: UnsafeBufferPointer(rebasing: head[(colon + 1)..<lineEnd]), as: UTF8.self).trimmingSpaces()
            } else if valueStart < 0 {
                value = ""
            } else {
                value = String(decoding: UnsafeBufferPointer(rebasing: head[valueStart..<valueEnd]), as: UTF8.self)
            }
            headers.add(String(decoding: name, as: UTF8.self), value)
            if equalsIgnoringASCIICase(name, "host") {
                hostCount += 1
            } else if equalsIgnoringASCIICase(name, "transfer-encoding") {
                transferEncodingCount += 1
            } else if equalsIgnoringASCIICase(name, "content-length") {
                contentLengthCount += 1
                contentLength = valueStart < 0 ? nil : decimalLength(UnsafeBufferPointer(rebasing: head[valueStart..<valueEnd]))
            }
            lineStart = lineEnd + 2
        }

        // Host (RFC 9112 §3.2): exactly one in HTTP/1.1.
        if hostCount > 1 || (version == .http11 && hostCount == 0) {
            return .failure(.init(.badRequest, "an HTTP/1.1 request needs exactly one Host header"))
        }

        let framing: BodyFraming
        if transferEncodingCount == 0 && contentLengthCount == 0 {
            framing = .none
        } else if transferEncodingCount == 0 && contentLengthCount == 1, let contentLength {
            framing = .length(contentLength)
        } else {
            framing = .fromFields
        }
        return .success((Pending(request: HTTPRequest(method: method, target: target, version: version, headers: headers), body: []), framing))
    }

    /// Whether `bytes` (a field name) is `lowercase` (lower-case ASCII) but for the case of letters.
    private static func equalsIgnoringASCIICase(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0..<bytes.count {
            let byte = bytes[index]
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            if folded != expected[index] { return false }
        }
        return true
    }

    /// Whether `bytes` begins with `prefix` (ASCII).
    private static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        let expected = prefix.utf8Start
        for index in 0..<prefix.utf8CodeUnitCount where bytes[index] != expected[index] { return false }
        return true
    }

    /// The value of 1 to 18 decimal digits (an Int holds them all), or nil for any other bytes.
    private static func decimalLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte.isDigit else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// Decides the body's framing (RFC 9112 §6.3) and starts reading it; returns an event if it can be
    /// answered at once.
    private mutating func beginBody(_ pending: consuming Pending, _ framing: BodyFraming) -> Event? {
        switch framing {
        case .none:
            state = .head
            return complete(pending)
        case .length(let length):
            // One Content-Length of plain digits: what the general rules below make of it, directly.
            if length > limits.maxBodyBytes {
                return fail(.init(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes"), after: pending)
            }
            if length == 0 {
                state = .head
                return complete(pending)
            }
            if buffer.count - start >= length {
                // All of the body is here (so no 100 Continue is due): one copy, no state to box.
                var pending = pending
                pending.body = Array(buffer[start..<start + length])
                start += length
                state = .head
                return complete(pending)
            }
            state = .body(copy pending, remaining: length)  // the body is still to come: rare, so copied
            return expectContinue(pending)
        case .fromFields:
            return beginBodyFromFields(pending)
        }
    }

    /// ``beginBody(_:_:)`` for every framing but the plain ones: Transfer-Encoding, and Content-Length
    /// fields that repeat, list values or do not parse.
    private mutating func beginBodyFromFields(_ pending: Pending) -> Event? {
        let headers = pending.request.headers
        let transferEncodings = headers.values("Transfer-Encoding")
        let lengths = headers.values("Content-Length")
        if !transferEncodings.isEmpty {
            if !lengths.isEmpty { return fail(.init(.badRequest, "both Transfer-Encoding and Content-Length"), after: pending) }
            if pending.request.version == .http10 { return fail(.init(.badRequest, "Transfer-Encoding in an HTTP/1.0 request"), after: pending) }
            let codings = transferEncodings.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces().lowercased() }
            guard codings == ["chunked"] else {
                return fail(.init(.notImplemented, "only Transfer-Encoding: chunked is supported"), after: pending)
            }
            state = .chunkSize(pending)
            return expectContinue(pending)
        }
        if !lengths.isEmpty {
            let values = Set(lengths.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { $0.trimmingSpaces() })
            guard values.count == 1, let text = values.first, !text.isEmpty, text.count <= 18, text.utf8.allSatisfy(\.isDigit), let length = Int(text) else {
                return fail(.init(.badRequest, values.count > 1 ? "differing Content-Length values" : "invalid Content-Length"), after: pending)
            }
            if length > limits.maxBodyBytes {
                return fail(.init(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes"), after: pending)
            }
            if length > 0 {
                state = .body(pending, remaining: length)
                return expectContinue(pending)
            }
        }
        state = .head
        return complete(pending)
    }

    private mutating func expectContinue(_ pending: Pending) -> Event? {
        guard !continueSent, bufferedByteCount == 0, pending.request.version == .http11,
              pending.request.headers.containsToken("100-continue", in: "Expect")
        else { return nil }
        continueSent = true
        return .expectContinue
    }

    /// Takes one CRLF-terminated line (without the CRLF), or nil if none is complete yet.
    private mutating func takeLine(limit: Int) -> Result<ArraySlice<UInt8>, HTTPParseError>? {
        guard let end = firstCRLF(from: start), end - start <= limit else { return nil }
        let line = buffer[start..<end]
        start = end + 2
        if line.contains(0x0D) || line.contains(0x0A) { return .failure(.init(.badRequest, "bare CR or LF")) }
        return .success(line)
    }
}

extension Result {
    package var success: Success? { if case .success(let value) = self { value } else { nil } }
    package var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}

extension UInt8 {
    package var isDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
    package var isHexDigit: Bool {
        isDigit || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f")) || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
    }
}

/// tchar (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters, as two 64-bit masks (bytes 0–63 and
/// 64–127) rather than a search of the punctuation.
package func isTokenByte(_ byte: UInt8) -> Bool {
    if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> byte & 1 != 0 }
    if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (byte - 64) & 1 != 0 }
    return false
}
