import HTTPCore

/// `HTTPRequestParser` as it was before its fast paths (commit aa0f6bf), kept verbatim but for names
/// and access levels, as the reference that `HTTPRequestParserEquivalenceTests` holds the shipped
/// parser to: for every input, the same events.
struct ReferenceHTTPRequestParser {
    typealias Event = HTTPRequestParser.Event

    /// The states that hold a request are `indirect` (boxed while a body is read): the parser lives
    /// inline in every connection, idle subscribers included, and a request inline would add about
    /// 100 bytes to each.
    private enum State {
        case head
        indirect case body(Pending, remaining: Int)
        indirect case chunkSize(Pending)
        indirect case chunkData(Pending, remaining: Int)
        indirect case chunkDataEnd(Pending)
        indirect case trailers(Pending)
        case failed(HTTPParseError)
    }

    /// A request whose head is parsed and whose body is being read.
    private struct Pending {
        var request: HTTPRequest
        var body: [UInt8]
    }

    let limits: HTTPLimits
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanned = 0
    private var state = State.head
    private var continueSent = false

    init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
    }

    /// Bytes received but not yet consumed by a complete request.
    var bufferedByteCount: Int { buffer.count - start }

    /// Whether a request has started arriving (head or body) but is not complete.
    var isMidRequest: Bool {
        if case .head = state { return bufferedByteCount > 0 }
        if case .failed = state { return false }
        return true
    }

    /// Whether the head is complete and the body is being read.
    var isReadingBody: Bool {
        switch state {
        case .head, .failed: false
        default: true
        }
    }

    /// Adds received bytes.
    mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Frees the buffer's memory, dropping any bytes not yet parsed (for a connection that will parse
    /// nothing more, such as an open event stream).
    mutating func releaseBuffer() {
        buffer = []
        start = 0
        scanned = 0
    }

    /// Parses as far as the buffered bytes allow.
    mutating func next() -> Event {
        while true {
            switch state {
            case .failed(let error):
                return .error(error)
            case .head:
                guard let result = parseHead() else { return checkHeadLimits() }
                switch result {
                case .failure(let error): return fail(error)
                case .success(let pending):
                    if let event = beginBody(pending) { return event }
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
                    return bufferedByteCount > 1024 ? fail(.init(.badRequest, "chunk size line too long")) : .needMore
                }
                guard let line = line.success else { return fail(line.failure!) }
                let sizeText = line.split(separator: UInt8(ascii: ";"), maxSplits: 1, omittingEmptySubsequences: false)[0]
                // chunk-size = 1*HEXDIG (RFC 9112 §7.1): no sign, no spaces; at most 15 digits fit an Int.
                guard !sizeText.isEmpty, sizeText.count <= 15, sizeText.allSatisfy(\.isHexDigit),
                      let size = Int(String(decoding: sizeText, as: UTF8.self), radix: 16) else {
                    return fail(.init(.badRequest, "invalid chunk size"))
                }
                if pending.body.count + size > limits.maxBodyBytes {
                    return fail(.init(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes"))
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
                guard buffer[start] == 0x0D, buffer[start + 1] == 0x0A else { return fail(.init(.badRequest, "chunk data not followed by CRLF")) }
                start += 2
                state = .chunkSize(pending)
            case .trailers(let pending):
                // Trailer fields are read and dropped (RFC 9112 §7.1.2); an empty line ends them.
                guard let line = takeLine(limit: limits.maxHeaderBytes) else {
                    return bufferedByteCount > limits.maxHeaderBytes ? fail(.init(.headerFieldsTooLarge, "trailer section too large")) : .needMore
                }
                guard let line = line.success else { return fail(line.failure!) }
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

    private mutating func complete(_ pending: Pending) -> Event {
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
    private mutating func parseHead() -> Result<Pending, HTTPParseError>? {
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while buffer.count - start >= 2, buffer[start] == 0x0D, buffer[start + 1] == 0x0A { start += 2 }
        if scanned < start { scanned = start }
        var end: Int?
        var index = max(start, scanned - 3)
        while index + 3 < buffer.count {
            if buffer[index + 3] == 0x0A, buffer[index + 2] == 0x0D, buffer[index + 1] == 0x0A, buffer[index] == 0x0D {
                end = index
                break
            }
            index += 1
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
        let head = Array(buffer[start..<headEnd])
        start = headEnd + 4
        scanned = start
        return Self.parseHead(head, limits: limits)
    }

    private static func parseHead(_ head: [UInt8], limits: HTTPLimits) -> Result<Pending, HTTPParseError> {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = 0
        var index = 0
        while index < head.count {
            let byte = head[index]
            if byte == 0x0D {
                guard index + 1 < head.count, head[index + 1] == 0x0A else {
                    return .failure(.init(.badRequest, "bare CR in the request head"))
                }
                lines.append(head[lineStart..<index])
                index += 2
                lineStart = index
                continue
            }
            if byte == 0x0A { return .failure(.init(.badRequest, "bare LF in the request head")) }
            if byte == 0 { return .failure(.init(.badRequest, "NUL byte in the request head")) }
            index += 1
        }
        lines.append(head[lineStart..<head.count])

        let requestLine = lines.removeFirst()
        let lineLimit = requestLine.count > limits.maxRequestLine ? limits.requestLineLimit(requestLine, complete: true) ?? limits.maxRequestLine : limits.maxRequestLine
        if requestLine.count > lineLimit {
            return .failure(.init(.uriTooLong, "the request line is longer than \(lineLimit) bytes"))
        }
        let headerBytes = head.count - requestLine.count
        if headerBytes > limits.maxHeaderBytes {
            return .failure(.init(.headerFieldsTooLarge, "the header section is larger than \(limits.maxHeaderBytes) bytes"))
        }
        if lines.count > limits.maxHeaderCount {
            return .failure(.init(.headerFieldsTooLarge, "more than \(limits.maxHeaderCount) header fields"))
        }

        // Request line: method SP request-target SP HTTP-version (RFC 9112 §3).
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.init(.badRequest, "malformed request line")) }
        guard !parts[0].isEmpty, parts[0].allSatisfy(Self.isTokenByte) else { return .failure(.init(.badRequest, "invalid method")) }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.init(.badRequest, "invalid request target"))
        }
        var target = String(decoding: parts[1], as: UTF8.self)
        let versionText = String(decoding: parts[2], as: UTF8.self)
        let version: HTTPVersion
        switch versionText {
        case "HTTP/1.1": version = .http11
        case "HTTP/1.0": version = .http10
        default:
            let bytes = Array(parts[2])
            if bytes.count == 8, versionText.hasPrefix("HTTP/"), bytes[5].isDigit, bytes[6] == UInt8(ascii: "."), bytes[7].isDigit {
                return .failure(.init(.httpVersionNotSupported, "only HTTP/1.0 and HTTP/1.1 are supported"))
            }
            return .failure(.init(.badRequest, "invalid HTTP version"))
        }
        // RFC 9112 §3.2: origin-form, absolute-form (reduced to its path), or asterisk-form for OPTIONS.
        if target.hasPrefix("http://") || target.hasPrefix("https://") {
            let afterScheme = target.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
            target = afterScheme.count == 4 ? "/" + afterScheme[3] : "/"
        } else if target == "*" {
            guard method == "OPTIONS" else { return .failure(.init(.badRequest, "asterisk-form is only for OPTIONS")) }
        } else if !target.hasPrefix("/") {
            return .failure(.init(.badRequest, "the request target must start with '/'"))
        }

        // Header fields: field-name ":" OWS field-value OWS (RFC 9112 §5).
        var headers = HTTPHeaders()
        for line in lines {
            guard let first = line.first else { continue }
            if first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
                return .failure(.init(.badRequest, "obsolete line folding is not accepted"))
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(.init(.badRequest, "header line without a colon"))
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else {
                return .failure(.init(.badRequest, "invalid header field name"))
            }
            let value = line[(colon + 1)...]
            guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(.init(.badRequest, "invalid character in a header field value"))
            }
            headers.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self).trimmingSpaces())
        }

        // Host (RFC 9112 §3.2): exactly one in HTTP/1.1.
        let hosts = Self.values(headers, "Host")
        if hosts.count > 1 || (version == .http11 && hosts.isEmpty) {
            return .failure(.init(.badRequest, "an HTTP/1.1 request needs exactly one Host header"))
        }

        return .success(Pending(request: HTTPRequest(method: method, target: target, version: version, headers: headers), body: []))
    }

    /// Decides the body's framing (RFC 9112 §6.3) and starts reading it; returns an event if it can be
    /// answered at once.
    private mutating func beginBody(_ pending: Pending) -> Event? {
        let headers = pending.request.headers
        let transferEncodings = Self.values(headers, "Transfer-Encoding")
        let lengths = Self.values(headers, "Content-Length")
        if !transferEncodings.isEmpty {
            if !lengths.isEmpty { return fail(.init(.badRequest, "both Transfer-Encoding and Content-Length")) }
            if pending.request.version == .http10 { return fail(.init(.badRequest, "Transfer-Encoding in an HTTP/1.0 request")) }
            let codings = transferEncodings.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces().lowercased() }
            guard codings == ["chunked"] else {
                return fail(.init(.notImplemented, "only Transfer-Encoding: chunked is supported"))
            }
            state = .chunkSize(pending)
            return expectContinue(pending)
        }
        if !lengths.isEmpty {
            let values = Set(lengths.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { $0.trimmingSpaces() })
            guard values.count == 1, let text = values.first, !text.isEmpty, text.count <= 18, text.utf8.allSatisfy(\.isDigit), let length = Int(text) else {
                return fail(.init(.badRequest, values.count > 1 ? "differing Content-Length values" : "invalid Content-Length"))
            }
            if length > limits.maxBodyBytes {
                return fail(.init(.contentTooLarge, "the body is larger than \(limits.maxBodyBytes) bytes"))
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
              Self.containsToken(pending.request.headers, "100-continue", in: "Expect")
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

    // The lookups as HTTPHeaders made them when this copy was taken (comparing `lowercased()`), and
    // tchar as it was, so that the reference does not lean on the code it checks.

    static func equalNames(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
    }

    static func values(_ headers: HTTPHeaders, _ name: String) -> [String] {
        headers.fields.filter { equalNames($0.name, name) }.map(\.value)
    }

    static func containsToken(_ headers: HTTPHeaders, _ token: String, in name: String) -> Bool {
        values(headers, name).contains { value in
            value.split(separator: ",").contains { $0.trimmingSpaces().lowercased() == token.lowercased() }
        }
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
