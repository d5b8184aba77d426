/// A string as a JSON string literal (RFC 8259 §7), appended to bytes: `"` and `\` escaped, the control
/// characters as `\b`, `\f`, `\n`, `\r`, `\t`, else `\u00xx` (lowercase hex, the canonical form of
/// docs/protocol.md), and, when asked, DEL too (`\u007f`: log lines are read on terminals). Everything
/// else, including non-ASCII, is copied as UTF-8.
///
/// The one escaper of the package: the wire's `JSONWriter`, HTTP error bodies and log lines use it.
public enum JSONStringEscaping {
    /// Appends `text` in quotes, escaped.
    /// - Complexity: O(length of `text`).
    @inlinable
    public static func append(_ text: String, to bytes: inout [UInt8], escapingDelete: Bool = false) {
        bytes.append(UInt8(ascii: "\""))
        appendContents(text, to: &bytes, escapingDelete: escapingDelete)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped, without the quotes. Runs of bytes that need no escape are copied whole.
    /// - Complexity: O(length of `text`).
    @inlinable
    public static func appendContents(_ text: String, to bytes: inout [UInt8], escapingDelete: Bool = false) {
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let unit = utf8[index]
                guard unit < 0x20 || unit == UInt8(ascii: "\"") || unit == UInt8(ascii: "\\") || (unit == 0x7F && escapingDelete) else { continue }
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                runStart = index + 1
                appendEscape(unit, to: &bytes)
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
    }

    /// How many bytes ``append(_:to:escapingDelete:)`` appends for `text` (quotes included, DEL not
    /// escaped), counted without writing them.
    /// - Complexity: O(length of `text`).
    @inlinable
    public static func count(_ text: String) -> Int {
        if let count = text.utf8.withContiguousStorageIfAvailable(count(utf8:)) { return count }
        var text = text
        return text.withUTF8(count(utf8:))
    }

    @usableFromInline
    static func count(utf8: UnsafeBufferPointer<UInt8>) -> Int {
        var count = utf8.count + 2
        for unit in utf8 where unit < 0x20 || unit == UInt8(ascii: "\"") || unit == UInt8(ascii: "\\") {
            switch unit {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09, 0x08, 0x0C: count += 1  // \x
            default: count += 5  // \u00xx
            }
        }
        return count
    }

    /// The escape of one byte that needs one.
    @usableFromInline
    static func appendEscape(_ unit: UInt8, to bytes: inout [UInt8]) {
        switch unit {
        case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
        case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
        case 0x0A: bytes.append(contentsOf: "\\n".utf8)
        case 0x0D: bytes.append(contentsOf: "\\r".utf8)
        case 0x09: bytes.append(contentsOf: "\\t".utf8)
        case 0x08: bytes.append(contentsOf: "\\b".utf8)
        case 0x0C: bytes.append(contentsOf: "\\f".utf8)
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes.append(contentsOf: "\\u00".utf8)
            hex.withUTF8Buffer { digits in
                bytes.append(digits[Int(unit >> 4)])
                bytes.append(digits[Int(unit & 0xF)])
            }
        }
    }
}
