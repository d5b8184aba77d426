import JSONEscaping
import Testing

struct JSONStringEscapingTests {
    @Test(arguments: [
        ("plain", "\"plain\""),
        ("", "\"\""),
        ("a\"b\\c", "\"a\\\"b\\\\c\""),
        ("\n\r\t\u{8}\u{C}", "\"\\n\\r\\t\\b\\f\""),
        ("\u{0}\u{1F}", "\"\\u0000\\u001f\""),
        ("é ☃ 😀 \u{2028}", "\"é ☃ 😀 \u{2028}\""),
        ("\u{7F}", "\"\u{7F}\""),
    ])
    func escapesWhatRFC8259Requires(text: String, expected: String) {
        var bytes: [UInt8] = []
        JSONStringEscaping.append(text, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == expected)
    }

    @Test func escapesDeleteForTerminalsWhenAsked() {
        var bytes: [UInt8] = Array("x=".utf8)
        JSONStringEscaping.appendContents("a\u{7F}b\"", to: &bytes, escapingDelete: true)
        #expect(String(decoding: bytes, as: UTF8.self) == "x=a\\u007fb\\\"")
    }
}
