/// Why JSON text could not be parsed: what was wrong and at which byte.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var offset: Int
    public var reason: String

    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var errorDescription: String? { "invalid JSON at byte \(offset): \(reason)" }
    public var description: String { errorDescription ?? "invalid JSON" }
}

/// A strict RFC 8259 parser from UTF-8 bytes to ``JSONValue``.
///
/// It rejects what a lenient parser might accept and a server must not: trailing garbage, comments,
/// leading zeros, lone surrogates, invalid UTF-8, raw control characters in strings, duplicate object
/// keys, and nesting deeper than ``maximumDepth`` (which would otherwise exhaust the stack).
public struct JSONParser {
    /// The deepest nesting of arrays and objects accepted.
    public static let maximumDepth = 256

    /// What to do with a number a `Double` cannot hold (its magnitude is beyond `Double.greatestFiniteMagnitude`).
    public enum NumbersBeyondDouble: Sendable {
        /// Refuse it with an error (the default: a ``JSONValue`` could not keep it).
        case refuse
        /// Read it as plus or minus infinity (for lossy views of exact data, such as ``JSONModel/value``).
        case infinity
    }

    /// Parses one JSON text. - Complexity: O(n) in the input's length.
    public static func parse(_ bytes: some Collection<UInt8>, numbersBeyondDouble: NumbersBeyondDouble = .refuse) throws(JSONParseError) -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            var parser = Parser(input: buffer, numbersBeyondDouble: numbersBeyondDouble)
            parser.skipWhitespace()
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            guard parser.offset == buffer.count else { throw parser.error("unexpected data after the JSON value") }
            return value
        }
    }

    /// Parses JSON text given as a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses JSON text given as a string, with a choice for numbers beyond `Double`.
    public static func parse(_ text: String, numbersBeyondDouble: NumbersBeyondDouble) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), numbersBeyondDouble: numbersBeyondDouble)
    }
}

private struct Parser {
    let input: UnsafeBufferPointer<UInt8>
    let numbersBeyondDouble: JSONParser.NumbersBeyondDouble
    var offset = 0

    init(input: UnsafeBufferPointer<UInt8>, numbersBeyondDouble: JSONParser.NumbersBeyondDouble) {
        self.input = input
        self.numbersBeyondDouble = numbersBeyondDouble
    }

    func error(_ reason: String) -> JSONParseError { JSONParseError(offset: offset, reason: reason) }

    var current: UInt8? { offset < input.count ? input[offset] : nil }

    mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }

    mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count {
            guard offset + index < input.count else { throw JSONParseError(offset: offset + index, reason: "unexpected end of input") }
            guard input[offset + index] == expected[index] else { throw JSONParseError(offset: offset + index, reason: "unexpected character") }
        }
        offset += count
        return value
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard let byte = current else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONParser.maximumDepth else { throw error("nesting deeper than \(JSONParser.maximumDepth)") }
        offset += 1
        var members: [(key: String, value: JSONValue)] = []
        var keys = Set<WireID>()  // keys compare by code points, not by canonical equivalence
        skipWhitespace()
        if current == UInt8(ascii: "}") { offset += 1; return .object(JSONObject(members)) }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let keyOffset = offset
            let key = try parseString()
            guard keys.insert(WireID(key)).inserted else {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            offset += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"): offset += 1; return .object(JSONObject(members))
            default: throw error("expected ',' or '}'")
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONParser.maximumDepth else { throw error("nesting deeper than \(JSONParser.maximumDepth)") }
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { offset += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"): offset += 1; return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = offset
        if current == UInt8(ascii: "-") { offset += 1 }
        guard let first = current, isDigit(first) else { throw error("expected a digit") }
        offset += 1
        if first == UInt8(ascii: "0"), let next = current, isDigit(next) { throw error("leading zeros are not allowed") }
        while let byte = current, isDigit(byte) { offset += 1 }
        if current == UInt8(ascii: ".") {
            offset += 1
            guard let byte = current, isDigit(byte) else { throw error("expected a digit after '.'") }
            while let byte = current, isDigit(byte) { offset += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard let byte = current, isDigit(byte) else { throw error("expected a digit in the exponent") }
            while let byte = current, isDigit(byte) { offset += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<offset]), as: UTF8.self)
        guard let value = Double(text), value.isFinite || numbersBeyondDouble == .infinity else {
            throw JSONParseError(offset: start, reason: "number out of the range of a Double (here numbers are read as Doubles; models keep any number exactly)")
        }
        return value
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// The bytes as a string, or nil if they are not UTF-8. `String(validating:as:)` is Swift 6's
    /// (macOS 15, iOS 18); the client products declare older Apple systems, where a string decoded
    /// with repairs is compared with its bytes instead (a repair changes them).
    static func validatedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, macCatalyst 18, *) {
            return String(validating: bytes, as: UTF8.self)
        }
        let string = String(decoding: bytes, as: UTF8.self)
        return string.utf8.elementsEqual(bytes) ? string : nil
    }

    mutating func parseString() throws(JSONParseError) -> String {
        offset += 1  // opening quote
        let start = offset
        // Fast path: no escapes.
        while offset < input.count {
            let byte = input[offset]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: input[start..<offset])
                guard let string = Self.validatedString(slice) else {
                    throw JSONParseError(offset: start, reason: "invalid UTF-8 in string")
                }
                offset += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            offset += 1
        }
        var bytes = Array(UnsafeBufferPointer(rebasing: input[start..<offset]))
        while true {
            guard let byte = current else { throw error("unterminated string") }
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = bytes.withUnsafeBufferPointer(Self.validatedString) else {
                    throw JSONParseError(offset: start, reason: "invalid UTF-8 in string")
                }
                return string
            case UInt8(ascii: "\\"):
                let escapeStart = offset - 1
                guard let escape = current else { throw error("unterminated string") }
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): bytes.append(0x22)
                case UInt8(ascii: "\\"): bytes.append(0x5C)
                case UInt8(ascii: "/"): bytes.append(0x2F)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try JSONUnicodeEscape.scalar(in: input, at: &offset, escapeStart: escapeStart)
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
                    bytes.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw JSONParseError(offset: escapeStart, reason: "invalid escape")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                bytes.append(byte)
            }
        }
    }
}
