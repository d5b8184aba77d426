import DiffStreamJSON
import Testing

/// The grammar (RFC 8259) and the strictness rules, for both readers: `JSONParser` (tree) and the
/// canonicalising scanner behind `JSONModel(parsing:)` and `WireCodec.decodeSnapshot`.
struct JSONParserTests {
    @Test(arguments: [
        "null", "true", "false", "0", "-0", "1", "-1", "0.5", "1e5", "1E+5", "1e-5", "1.5e005", "123456789012345678901234567890",
        "1e400", "-1e-400", "1e99999999999999999999", "\"\"", "\"a\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0041\\u00e9\\u2028\"",
        "\"\\ud83d\\ude00\"", "\"é😀中\"", "\"\u{7F}\"", "[]", "[1,2,3]", "{}", "{\"a\":1}", " \t\r\n{ \"a\" : [ 1 , { } ] } \n",
        "{\"\u{E9}\":1,\"e\u{301}\":2}", "{\"a\":{\"a\":{\"a\":1}}}", "[[],[[]],{}]",
    ])
    func accepted(text: String) {
        let readers = BothReaders(text)
        #expect(readers.treeError == nil, "tree: \(String(describing: readers.treeError))")
        #expect(readers.modelError == nil, "model: \(String(describing: readers.modelError))")
    }

    /// Refused input, the byte offset each reader must report, and a word of the reason.
    @Test(arguments: [
        ("", 0, "end"), (" ", 1, "end"), ("nul", 3, "end"), ("nulx", 3, "unexpected"), ("tru", 3, "end"), ("trUe", 2, "unexpected"),
        ("01", 1, "leading zeros"), ("-01", 2, "leading zeros"), ("00", 1, "leading zeros"), ("1.", 2, "digit"), (".5", 0, "unexpected"),
        ("1e", 2, "exponent"), ("1e+", 3, "exponent"), ("-", 1, "digit"), ("+1", 0, "unexpected"), ("0x10", 1, "after"),
        ("[1,]", 3, "unexpected"), ("[1 2]", 3, "expected ','"), ("{\"a\":1,}", 7, "key"), ("{\"a\" 1}", 5, "':'"), ("{a:1}", 1, "key"),
        ("{\"a\":1 \"b\":2}", 7, "expected ','"), ("[1", 2, "expected ','"), ("{\"a\":1", 6, "expected ','"),
        ("\"abc", 4, "unterminated"), ("\"a\u{1}\"", 2, "control"), ("\"a\nb\"", 2, "control"), ("\"\\x\"", 1, "escape"),
        ("\"\\u12\"", 5, "\\u"), ("\"\\ud800\"", 1, "surrogate"), ("\"\\udc00\"", 1, "surrogate"), ("\"\\ud800\\u0041\"", 1, "surrogate"),
        ("{\"a\":1,\"a\":2}", 7, "duplicate"), ("{\"b\":1,\"a\":2,\"b\":3}", 13, "duplicate"), ("{\"a\":1,\"\\u0061\":2}", 7, "duplicate"),
        ("1 2", 2, "after"), ("[] x", 3, "after"), ("// c\n1", 0, "unexpected"), ("NaN", 0, "unexpected"), ("Infinity", 0, "unexpected"),
    ] as [(String, Int, String)])
    func refusedWithOffset(text: String, offset: Int, reason: String) {
        let readers = BothReaders(text)
        for error in [readers.treeError, readers.modelError] {
            #expect(error?.offset == offset, "\(String(describing: error)) for \(text.debugDescription)")
            #expect(error?.reason.contains(reason) == true, "\(String(describing: error)) for \(text.debugDescription)")
        }
    }

    /// Invalid UTF-8 (RFC 3629 §4): truncated, overlong, surrogates, beyond U+10FFFF, stray continuation.
    @Test(arguments: [
        [0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE0, 0x80, 0xAF, 0x22],
        [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0x80, 0x22], [0x22, 0x61, 0xE2, 0x82, 0x22],
    ] as [[UInt8]])
    func invalidUTF8IsRefused(bytes: [UInt8]) {
        let readers = BothReaders(bytes)
        #expect(readers.treeError?.reason.contains("UTF-8") == true)
        #expect(readers.modelError?.reason.contains("UTF-8") == true)
        #expect(readers.modelError.map { (1..<bytes.count).contains($0.offset) } == true, "offset of the bad sequence")
    }

    @Test func depthLimit() {
        let limit = JSONParser.maximumDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        let readers = BothReaders(deepest)
        #expect(readers.treeError == nil && readers.modelError == nil)
        let refused = BothReaders(tooDeep)
        #expect(refused.treeError?.offset == limit && refused.modelError?.offset == limit)
        #expect(refused.modelError?.reason.contains("nesting") == true)
        let objects = String(repeating: "{\"a\":", count: limit + 1) + "1" + String(repeating: "}", count: limit + 1)
        #expect(BothReaders(objects).modelError?.reason.contains("nesting") == true)
    }

    @Test func keysAreDistinctByCodePoints() throws {
        let value = try JSONParser.parse("{\"\u{E9}\":1,\"e\u{301}\":2}")
        #expect(value.objectValue?.count == 2)
        #expect(value["\u{E9}"] == 1 && value["e\u{301}"] == 2)
        #expect(JSONValue.string("\u{E9}") != JSONValue.string("e\u{301}"))
    }

    @Test func numbersBeyondDoubleAreRefusedByTheTreeUnlessAsked() throws {
        #expect(throws: JSONParseError.self) { try JSONParser.parse("1e400") }
        #expect(try JSONParser.parse("1e400", numbersBeyondDouble: .infinity) == .number(.infinity))
    }
}
