/// The one reader of a `\uXXXX` escape for both JSON readers (`JSONParser` and
/// `CanonicalJSONScanner`): four hexadecimal digits, and a UTF-16 surrogate pair as two escapes in a
/// row (RFC 8259 §7).
enum JSONUnicodeEscape {
    /// Reads the digits at `offset` (just past `\u`) and, for a high surrogate, the `\uXXXX` of its low
    /// half; returns the Unicode scalar value and leaves `offset` past what it read.
    /// - Throws: ``JSONParseError``: a digit missing or not hexadecimal (at the digit), or a lone
    ///   surrogate (at `escapeStart`, the backslash).
    /// - Complexity: O(1).
    static func scalar(in input: UnsafeBufferPointer<UInt8>, at offset: inout Int, escapeStart: Int) throws(JSONParseError) -> UInt32 {
        let unit = try hex4(in: input, at: &offset)
        if (0xDC00...0xDFFF).contains(unit) { throw JSONParseError(offset: escapeStart, reason: "lone surrogate in string") }
        guard (0xD800...0xDBFF).contains(unit) else { return unit }
        guard offset + 1 < input.count, input[offset] == UInt8(ascii: "\\"), input[offset + 1] == UInt8(ascii: "u") else {
            throw JSONParseError(offset: escapeStart, reason: "lone surrogate in string")
        }
        offset += 2
        let low = try hex4(in: input, at: &offset)
        guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseError(offset: escapeStart, reason: "lone surrogate in string") }
        return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
    }

    private static func hex4(in input: UnsafeBufferPointer<UInt8>, at offset: inout Int) throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard offset < input.count else { throw JSONParseError(offset: offset, reason: "unterminated \\u escape") }
            let byte = input[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(offset: offset, reason: "invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }
}
