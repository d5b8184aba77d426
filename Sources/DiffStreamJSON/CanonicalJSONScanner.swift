#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A strict RFC 8259 reader that writes the canonical form of what it reads into ``out``, without
/// building a tree.
///
/// It refuses what ``JSONParser`` refuses (trailing data, leading zeros, lone surrogates, invalid
/// UTF-8, raw control characters, duplicate keys, nesting deeper than ``JSONParser/maximumDepth``),
/// each with the byte offset of the problem, and accepts every number the grammar allows.
///
/// The canonical form: no whitespace; object members sorted by the bytes of their canonical keys;
/// strings with raw UTF-8 and only the escapes JSON requires (`\"`, `\\`, `\b \f \n \r \t`, other
/// control characters as `\u00xx`); numbers as ``CanonicalNumber`` spells them.
struct CanonicalJSONScanner {
    let input: UnsafeBufferPointer<UInt8>
    var offset = 0
    /// Where canonical text is written.
    var out: [UInt8] = []
    /// Members of the objects being read (a stack: each open object owns the spans from its base).
    private var spans: [MemberSpan] = []
    private var scratch: [UInt8] = []

    struct MemberSpan {
        /// The key's canonical bytes in `out`, without quotes.
        var keyStart: Int
        var keyEnd: Int
        /// Where the member (key, colon, value) ends in `out`.
        var end: Int
        /// Where the key starts in the input (for the duplicate-key error).
        var inputOffset: Int
    }

    init(input: UnsafeBufferPointer<UInt8>) { self.input = input }

    /// The canonical form of one JSON text. - Complexity: O(n log n) (sorting keys), O(n) when sorted.
    static func canonicalize(_ input: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> [UInt8] {
        var scanner = CanonicalJSONScanner(input: input)
        scanner.out.reserveCapacity(input.count)
        scanner.skipWhitespace()
        try scanner.value(depth: 0)
        scanner.skipWhitespace()
        guard scanner.offset == input.count else { throw scanner.error("unexpected data after the JSON value") }
        return scanner.out
    }

    func error(_ reason: String) -> JSONParseError { JSONParseError(offset: offset, reason: reason) }
    func error(_ reason: String, at offset: Int) -> JSONParseError { JSONParseError(offset: offset, reason: reason) }

    @inline(__always) var atEnd: Bool { offset >= input.count }
    @inline(__always) var current: UInt8 { offset < input.count ? input[offset] : 0 }

    @inline(__always) mutating func skipWhitespace() {
        while offset < input.count {
            switch input[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }

    // MARK: Values

    /// Reads one value and writes its canonical form. `depth` counts the arrays and objects around it.
    mutating func value(depth: Int) throws(JSONParseError) {
        guard offset < input.count else { throw error("unexpected end of input") }
        switch input[offset] {
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "{"): try object(depth: depth + 1)
        case UInt8(ascii: "["): try array(depth: depth + 1)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: throw error("unexpected character")
        }
    }

    /// Reads a value and discards it (still validated).
    mutating func skipValue(depth: Int) throws(JSONParseError) {
        let mark = out.count
        try value(depth: depth)
        out.removeSubrange(mark...)
    }

    mutating func literal(_ text: StaticString) throws(JSONParseError) {
        let count = text.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: count)
        for index in 0..<count {
            guard offset + index < input.count else { throw error("unexpected end of input", at: offset + index) }
            guard input[offset + index] == expected[index] else { throw error("unexpected character", at: offset + index) }
        }
        out.append(contentsOf: expected)
        offset += count
    }

    mutating func array(depth: Int) throws(JSONParseError) {
        guard depth <= JSONParser.maximumDepth else { throw error("nesting deeper than \(JSONParser.maximumDepth)") }
        offset += 1
        out.append(UInt8(ascii: "["))
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            offset += 1
            out.append(UInt8(ascii: "]"))
            return
        }
        while true {
            skipWhitespace()
            try value(depth: depth)
            skipWhitespace()
            guard offset < input.count else { throw error("expected ',' or ']'") }
            switch input[offset] {
            case UInt8(ascii: ","):
                offset += 1
                out.append(UInt8(ascii: ","))
            case UInt8(ascii: "]"):
                offset += 1
                out.append(UInt8(ascii: "]"))
                return
            default: throw error("expected ',' or ']'")
            }
        }
    }

    mutating func object(depth: Int) throws(JSONParseError) {
        guard depth <= JSONParser.maximumDepth else { throw error("nesting deeper than \(JSONParser.maximumDepth)") }
        offset += 1
        out.append(UInt8(ascii: "{"))
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            offset += 1
            out.append(UInt8(ascii: "}"))
            return
        }
        let base = spans.count
        let membersStart = out.count
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let keyOffset = offset
            let keyStart = out.count + 1
            try string()
            let keyEnd = out.count - 1
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            offset += 1
            out.append(UInt8(ascii: ":"))
            skipWhitespace()
            try value(depth: depth)
            spans.append(MemberSpan(keyStart: keyStart, keyEnd: keyEnd, end: out.count, inputOffset: keyOffset))
            skipWhitespace()
            guard offset < input.count else { throw error("expected ',' or '}'") }
            if input[offset] == UInt8(ascii: ",") {
                offset += 1
                out.append(UInt8(ascii: ","))
            } else if input[offset] == UInt8(ascii: "}") {
                offset += 1
                break
            } else {
                throw error("expected ',' or '}'")
            }
        }
        if spans.count - base > 1 { try sortMembers(from: base, membersStart: membersStart) }
        spans.removeSubrange(base...)
        out.append(UInt8(ascii: "}"))
    }

    /// Puts an object's members in canonical order and refuses duplicate keys. Small objects are sorted
    /// in place (insertion sort), larger ones with the standard library's sort.
    private mutating func sortMembers(from base: Int, membersStart: Int) throws(JSONParseError) {
        let count = spans.count - base
        var ordered = true
        out.withUnsafeBufferPointer { buffer in
            for index in (base + 1)..<spans.count where Self.compareKeys(buffer, spans[index - 1], spans[index]) >= 0 {
                ordered = false
                break
            }
        }
        if ordered { return }
        if count <= 16 {
            out.withUnsafeBufferPointer { buffer in
                for index in (base + 1)..<spans.count {
                    let moving = spans[index]
                    var position = index
                    while position > base && Self.compareKeys(buffer, spans[position - 1], moving) > 0 {
                        spans[position] = spans[position - 1]
                        position -= 1
                    }
                    spans[position] = moving
                }
            }
        } else {
            var members = Array(spans[base...])
            out.withUnsafeBufferPointer { buffer in members.sort { Self.compareKeys(buffer, $0, $1) < 0 } }
            spans.replaceSubrange(base..., with: members)
        }
        var duplicate: (MemberSpan, MemberSpan)?
        out.withUnsafeBufferPointer { buffer in
            for index in (base + 1)..<spans.count where Self.compareKeys(buffer, spans[index - 1], spans[index]) == 0 {
                duplicate = (spans[index - 1], spans[index])
                break
            }
        }
        if let (first, second) = duplicate {
            let later = first.inputOffset > second.inputOffset ? first : second
            let key = String(decoding: out[later.keyStart..<min(later.keyEnd, later.keyStart + 64)], as: UTF8.self)
            throw error("duplicate key \"\(key)\"", at: later.inputOffset)
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: out[membersStart...])
        var write = membersStart
        out.withUnsafeMutableBufferPointer { target in
            scratch.withUnsafeBufferPointer { source in
                for index in base..<spans.count {
                    if index > base {
                        target[write] = UInt8(ascii: ",")
                        write += 1
                    }
                    let from = spans[index].keyStart - 1 - membersStart
                    let length = spans[index].end - spans[index].keyStart + 1
                    UnsafeMutableRawPointer(target.baseAddress! + write).copyMemory(from: source.baseAddress! + from, byteCount: length)
                    write += length
                }
            }
        }
    }

    /// Byte order of two canonical keys (a prefix comes first).
    private static func compareKeys(_ buffer: UnsafeBufferPointer<UInt8>, _ lhs: MemberSpan, _ rhs: MemberSpan) -> Int {
        let left = lhs.keyEnd - lhs.keyStart
        let right = rhs.keyEnd - rhs.keyStart
        let common = min(left, right)
        if common > 0 {
            let result = memcmp(buffer.baseAddress! + lhs.keyStart, buffer.baseAddress! + rhs.keyStart, common)
            if result != 0 { return Int(result) }
        }
        return left - right
    }

    // MARK: Strings

    /// Reads a string and writes it canonically, quotes included.
    mutating func string() throws(JSONParseError) {
        offset += 1
        out.append(UInt8(ascii: "\""))
        var runStart = offset
        while true {
            skipPlainASCII()
            guard offset < input.count else { throw error("unterminated string") }
            let byte = input[offset]
            if byte == UInt8(ascii: "\"") {
                appendInput(runStart..<offset)
                offset += 1
                out.append(UInt8(ascii: "\""))
                return
            } else if byte == UInt8(ascii: "\\") {
                appendInput(runStart..<offset)
                let scalar = try escape()
                Self.writeCanonical(scalar, into: &out)
                runStart = offset
            } else if byte < 0x20 {
                throw error("control character in string")
            } else if byte < 0x80 {
                offset += 1
            } else {
                try skipUTF8Sequence()
            }
        }
    }

    /// Reads a string's value (unescaped) as bytes, or straight from the input when it has no escapes.
    mutating func stringValue() throws(JSONParseError) -> String {
        offset += 1
        let start = offset
        while true {
            skipPlainASCII()
            guard offset < input.count else { throw error("unterminated string") }
            let byte = input[offset]
            if byte == UInt8(ascii: "\"") {
                offset += 1
                return String(decoding: UnsafeBufferPointer(rebasing: input[start..<offset - 1]), as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                break
            } else if byte < 0x20 {
                throw error("control character in string")
            } else if byte < 0x80 {
                offset += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        var bytes = Array(UnsafeBufferPointer(rebasing: input[start..<offset]))
        var runStart = offset
        while true {
            skipPlainASCII()
            guard offset < input.count else { throw error("unterminated string") }
            let byte = input[offset]
            if byte == UInt8(ascii: "\"") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<offset]))
                offset += 1
                return String(decoding: bytes, as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<offset]))
                Self.appendUTF8(try escape(), to: &bytes)
                runStart = offset
            } else if byte < 0x20 {
                throw error("control character in string")
            } else if byte < 0x80 {
                offset += 1
            } else {
                try skipUTF8Sequence()
            }
        }
    }

    @inline(__always) private mutating func appendInput(_ range: Range<Int>) {
        if !range.isEmpty { out.append(contentsOf: UnsafeBufferPointer(rebasing: input[range])) }
    }

    /// Skips bytes that need no attention in a string (printable ASCII other than `"` and `\`), eight
    /// at a time while it can.
    @inline(__always) private mutating func skipPlainASCII() {
        let count = input.count
        if let base = input.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while offset + 8 <= count {
                let word = UnsafeRawPointer(base + offset).loadUnaligned(as: UInt64.self)
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let special = (word | ((word &- ones &* 0x20) & ~word))
                    | ((quote &- ones) & ~quote)
                    | ((backslash &- ones) & ~backslash)
                if special & highs != 0 { break }
                offset += 8
            }
        }
        while offset < count {
            let byte = input[offset]
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") else { return }
            offset += 1
        }
    }

    /// Checks one multi-byte UTF-8 sequence (RFC 3629 §4: no overlongs, no surrogates, at most U+10FFFF).
    private mutating func skipUTF8Sequence() throws(JSONParseError) {
        let first = input[offset]
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        let length: Int
        switch first {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw error("invalid UTF-8 in string")
        }
        guard offset + length <= input.count else { throw error("invalid UTF-8 in string") }
        let second = input[offset + 1]
        guard second >= low, second <= high else { throw error("invalid UTF-8 in string") }
        for index in 2..<max(2, length) where input[offset + index] & 0xC0 != 0x80 {
            throw error("invalid UTF-8 in string")
        }
        offset += length
    }

    /// Reads an escape (at the backslash) and returns the scalar it stands for.
    private mutating func escape() throws(JSONParseError) -> UInt32 {
        let start = offset
        offset += 1
        guard offset < input.count else { throw error("unterminated string") }
        let letter = input[offset]
        offset += 1
        switch letter {
        case UInt8(ascii: "\""): return 0x22
        case UInt8(ascii: "\\"): return 0x5C
        case UInt8(ascii: "/"): return 0x2F
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "f"): return 0x0C
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        case UInt8(ascii: "u"):
            return try JSONUnicodeEscape.scalar(in: input, at: &offset, escapeStart: start)
        default:
            throw error("invalid escape", at: start)
        }
    }

    /// Writes one scalar the way the canonical form spells it inside a string.
    static func writeCanonical(_ scalar: UInt32, into out: inout [UInt8]) {
        switch scalar {
        case 0x22: out.append(0x5C); out.append(0x22)
        case 0x5C: out.append(0x5C); out.append(0x5C)
        case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
        case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
        case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(scalar >> 4)], hex[Int(scalar & 0xF)]])
        default: appendUTF8(scalar, to: &out)
        }
    }

    /// Appends a scalar's UTF-8 encoding (the caller has ruled out surrogates).
    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | scalar >> 6))
            out.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | scalar >> 12))
            out.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        default:
            out.append(UInt8(0xF0 | scalar >> 18))
            out.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
            out.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            out.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    // MARK: Numbers

    /// Reads a number (RFC 8259 §6) and writes its canonical spelling.
    mutating func number() throws(JSONParseError) {
        let start = offset
        let negative = input[offset] == UInt8(ascii: "-")
        if negative { offset += 1 }
        guard offset < input.count, isDigit(input[offset]) else { throw error("expected a digit") }
        let integerStart = offset
        if input[offset] == UInt8(ascii: "0") {
            offset += 1
            if offset < input.count, isDigit(input[offset]) { throw error("leading zeros are not allowed") }
        } else {
            while offset < input.count, isDigit(input[offset]) { offset += 1 }
        }
        let integerEnd = offset
        var fractionEnd = offset
        if offset < input.count, input[offset] == UInt8(ascii: ".") {
            offset += 1
            guard offset < input.count, isDigit(input[offset]) else { throw error("expected a digit after '.'") }
            while offset < input.count, isDigit(input[offset]) { offset += 1 }
            fractionEnd = offset
        }
        var exponent: Range<Int>?
        var exponentNegative = false
        if offset < input.count, input[offset] | 0x20 == UInt8(ascii: "e") {
            offset += 1
            if offset < input.count, input[offset] == UInt8(ascii: "+") || input[offset] == UInt8(ascii: "-") {
                exponentNegative = input[offset] == UInt8(ascii: "-")
                offset += 1
            }
            guard offset < input.count, isDigit(input[offset]) else { throw error("expected a digit in the exponent") }
            let exponentStart = offset
            while offset < input.count, isDigit(input[offset]) { offset += 1 }
            exponent = exponentStart..<offset
        }
        // The common case: an integer of at most 21 digits is already canonical (except -0).
        if exponent == nil, fractionEnd == integerEnd, integerEnd - integerStart <= 21 {
            if negative, integerEnd - integerStart == 1, input[integerStart] == UInt8(ascii: "0") {
                out.append(UInt8(ascii: "0"))
            } else {
                appendInput(start..<integerEnd)
            }
            return
        }
        CanonicalNumber.write(
            negative: negative,
            integer: UnsafeBufferPointer(rebasing: input[integerStart..<integerEnd]),
            fraction: UnsafeBufferPointer(rebasing: input[min(integerEnd + 1, fractionEnd)..<fractionEnd]),
            exponent: exponent.map { UnsafeBufferPointer(rebasing: input[$0]) },
            exponentNegative: exponentNegative,
            into: &out)
    }

    @inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
}
