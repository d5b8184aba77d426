/// Reads an HTTP/1.1 response as it arrives, in any splits (RFC 9112): the status line (§4), the
/// header fields (§5), interim `1xx` responses skipped (RFC 9110 §15.2), and the body framed by
/// `Transfer-Encoding: chunked` (§7.1), by `Content-Length` (§6.2), or by the end of the connection (§6.3).
/// Pure: no sockets; the transport feeds it bytes and passes its outputs on.
public struct HTTPResponseParser: Sendable {
    /// What the bytes so far made of the response.
    public enum Output: Equatable, Sendable {
        /// The final status line was read (with its header fields).
        case head(status: Int)
        /// Body bytes, with any transfer coding removed.
        case body([UInt8])
        /// The body is complete.
        case end
    }

    /// Why a response cannot be read.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// What is wrong, e.g. `a bad chunk size line "zz"`, or that the connection closed mid-body.
        public let reason: String
        public var description: String { reason }
    }

    private enum Framing: Equatable { case chunked, length(Int), untilClose }
    private enum State: Equatable {
        case head
        case fixed(remaining: Int)
        case untilClose
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case done
    }

    /// The largest head (status line and fields) or chunk-size line accepted.
    public let maximumHeadSize: Int
    private var state = State.head
    private var buffer: [UInt8] = []

    public init(maximumHeadSize: Int = 65_536) { self.maximumHeadSize = maximumHeadSize }

    /// Whether the body is complete.
    public var isComplete: Bool { state == .done }

    /// Consumes `bytes`, returning what they complete. Bytes after the end of the body are ignored.
    /// - Complexity: O(n) in the bytes given and the bytes buffered.
    public mutating func consume(_ bytes: some Collection<UInt8>) throws(ParseError) -> [Output] {
        var outputs: [Output] = []
        var input = ArraySlice(bytes)
        while !input.isEmpty {
            switch state {
            case .done:
                return outputs
            case .fixed(let remaining), .chunkData(let remaining):
                let take = min(remaining, input.count)
                outputs.append(.body(Array(input.prefix(take))))
                input = input.dropFirst(take)
                if case .fixed = state {
                    state = remaining == take ? .done : .fixed(remaining: remaining - take)
                    if state == .done { outputs.append(.end) }
                } else {
                    state = remaining == take ? .chunkDataEnd : .chunkData(remaining: remaining - take)
                }
            case .untilClose:
                outputs.append(.body(Array(input)))
                input = []
            case .head, .chunkSize, .chunkDataEnd, .trailers:
                // Line-oriented states: gather up to the next LF.
                guard let lf = input.firstIndex(of: 10) else {
                    buffer.append(contentsOf: input)
                    input = []
                    if buffer.count > maximumHeadSize { throw ParseError(reason: "a line or head longer than \(maximumHeadSize) bytes") }
                    continue
                }
                buffer.append(contentsOf: input[..<lf])
                input = input[(lf + 1)...]
                if buffer.last == 13 { buffer.removeLast() }  // CRLF; a bare LF is tolerated (§2.2)
                let line = buffer
                buffer = []
                if let output = try takeLine(line) { outputs.append(output) }
                if state == .done { outputs.append(.end) }
            }
        }
        return outputs
    }

    /// The connection ended: fine after a complete body or a body delimited by the close; otherwise an error.
    public mutating func finish() throws(ParseError) -> [Output] {
        switch state {
        case .done: return []
        case .untilClose:
            state = .done
            return [.end]
        case .head: throw ParseError(reason: "the connection closed before the response head was complete")
        default: throw ParseError(reason: "the connection closed before the body was complete")
        }
    }

    // MARK: Lines

    private var headLines: [[UInt8]] = []

    private mutating func takeLine(_ line: [UInt8]) throws(ParseError) -> Output? {
        switch state {
        case .head:
            if !line.isEmpty {
                headLines.append(line)
                if headLines.reduce(0, { $0 + $1.count }) > maximumHeadSize { throw ParseError(reason: "a head longer than \(maximumHeadSize) bytes") }
                return nil
            }
            if headLines.isEmpty { return nil }  // RFC 9112 §2.2: empty lines before the status line are ignored
            let lines = headLines
            headLines = []
            return try takeHead(lines)
        case .chunkSize:
            // §7.1: chunk-size [ chunk-ext ] CRLF, the size in hex.
            let sizeDigits = line.prefix { $0 != UInt8(ascii: ";") && $0 != UInt8(ascii: " ") && $0 != 9 }
            guard !sizeDigits.isEmpty, sizeDigits.count <= 15, let size = Int(String(decoding: sizeDigits, as: UTF8.self), radix: 16), size >= 0,
                  sizeDigits.allSatisfy({ Self.isHexDigit($0) }) else {
                throw ParseError(reason: "a bad chunk size line \"\(Self.printable(line))\"")
            }
            state = size == 0 ? .trailers : .chunkData(remaining: size)
            return nil
        case .chunkDataEnd:
            guard line.isEmpty else { throw ParseError(reason: "no CRLF after a chunk's data") }
            state = .chunkSize
            return nil
        case .trailers:
            if line.isEmpty { state = .done }  // trailer fields are read and dropped (§7.1.2)
            return nil
        default:
            return nil
        }
    }

    private mutating func takeHead(_ lines: [[UInt8]]) throws(ParseError) -> Output? {
        // §4: HTTP-version SP status-code SP [ reason-phrase ]
        let statusLine = lines[0]
        guard statusLine.count >= 12, statusLine.starts(with: Array("HTTP/1.".utf8)), statusLine[8] == UInt8(ascii: " "),
              statusLine[9...11].allSatisfy({ $0 >= 48 && $0 <= 57 }), statusLine.count == 12 || statusLine[12] == UInt8(ascii: " "),
              let status = Int(String(decoding: statusLine[9...11], as: UTF8.self)), status >= 100 else {
            throw ParseError(reason: "a bad status line \"\(Self.printable(statusLine))\"")
        }
        var chunked = false
        var length: Int?
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else {
                throw ParseError(reason: "a header line without a name \"\(Self.printable(line))\"")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
            switch name {
            case "transfer-encoding":
                let codings = value.lowercased().split(separator: ",").map { String($0).trimmingSpaces() }
                guard codings.last == "chunked" else { throw ParseError(reason: "an unsupported transfer coding \"\(value)\"") }
                guard codings.count == 1 else { throw ParseError(reason: "an unsupported transfer coding \"\(value)\" (no gzip was asked for)") }
                chunked = true
            case "content-length":
                guard let count = Int(value), count >= 0, value.allSatisfy(\.isASCIIDigitCharacter), length == nil || length == count else {
                    throw ParseError(reason: "a bad Content-Length \"\(value)\"")
                }
                length = count
            default:
                break
            }
        }
        if status < 200 {
            if status == 101 { throw ParseError(reason: "an unexpected 101 Switching Protocols") }
            return nil  // interim: the final response follows (RFC 9110 §15.2)
        }
        // §6.3: 204 and 304 have no body; chunked wins over Content-Length.
        let framing: Framing = status == 204 || status == 304 ? .length(0) : chunked ? .chunked : length.map { .length($0) } ?? .untilClose
        switch framing {
        case .chunked: state = .chunkSize
        case .length(let count): state = count == 0 ? .done : .fixed(remaining: count)
        case .untilClose: state = .untilClose
        }
        return .head(status: status)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }

    private static func printable(_ line: some Collection<UInt8>) -> String {
        String(String(decoding: line.prefix(80), as: UTF8.self).map { $0.isASCII && !$0.isNewline ? $0 : "?" })
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
