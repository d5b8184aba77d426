/// A string as a JSON string literal (RFC 8259 §7), appended to bytes: `"`, `\`, and the control
/// characters escaped (`\n`, `\r`, `\t`, else `\u00XX`), and DEL too (a log line is read on terminals).
enum JSONStringEscaping {
    /// Appends `text` in quotes, escaped.
    /// - Complexity: O(length of `text`).
    static func append(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        appendContents(text, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `text` escaped, without the quotes. Runs of bytes that need no escape are copied whole.
    /// - Complexity: O(length of `text`).
    static func appendContents(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let unit = utf8[index]
                guard unit < 0x20 || unit == UInt8(ascii: "\"") || unit == UInt8(ascii: "\\") || unit == 0x7F else { continue }
                if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index])) }
                runStart = index + 1
                switch unit {
                case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
                case 0x0A: bytes.append(contentsOf: "\\n".utf8)
                case 0x0D: bytes.append(contentsOf: "\\r".utf8)
                case 0x09: bytes.append(contentsOf: "\\t".utf8)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: "\\u00".utf8)
                    bytes.append(hex[Int(unit >> 4)])
                    bytes.append(hex[Int(unit & 0xF)])
                }
            }
            if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
        }
    }
}
