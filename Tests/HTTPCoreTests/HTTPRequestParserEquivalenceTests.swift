import HTTPCore
import Testing
import TestSupport

/// The parser's fast paths (one pass over the head's bytes, plain Content-Length framing decided while
/// the fields are read, a body that is all there copied at once) against `ReferenceHTTPRequestParser`,
/// the parser as it was before them: for generated requests, valid and not, fed whole, split in two at
/// every byte and one byte at a time, the same events (requests, `100 Continue`s, `needMore`s, and
/// errors with their status and message) and the same state after each.
struct HTTPRequestParserEquivalenceTests {
    /// The limits a case runs under: the defaults, and small ones that generated heads reach.
    static let limitsTable: [(String, HTTPLimits)] = {
        var small = HTTPLimits()
        small.maxRequestLine = 64
        small.longRequestLines = ["/events": 96]
        small.maxHeaderBytes = 160
        small.maxHeaderCount = 6
        small.maxBodyBytes = 40
        return [("default", HTTPLimits()), ("small", small)]
    }()

    @Test(arguments: [UInt64(1), 2, 3, 4], [0, 1])
    func generatedRequestsGiveTheSameEventsAsTheReference(seed: UInt64, limitsIndex: Int) {
        let (limitsName, limits) = Self.limitsTable[limitsIndex]
        var rng = SeededGenerator(seed: seed &* 0x1_0000 &+ UInt64(limitsIndex))
        for round in 0..<50 {
            var input = RequestGenerator.request(using: &rng)
            if Bool.random(using: &rng) { input += RequestGenerator.request(using: &rng) }  // pipelined
            let label = "seed \(seed), \(limitsName) limits, round \(round): \(RequestGenerator.describe(input))"
            // Whole, split in two at every byte (at a few for the longest inputs), one byte at a time.
            compare(pieces: [input], limits: limits, label)
            let step = input.count > 400 ? input.count / 40 : 1
            for split in stride(from: 0, through: input.count, by: step) {
                compare(pieces: [Array(input[..<split]), Array(input[split...])], limits: limits, "\(label), split at \(split)")
            }
            if input.count <= 400 { compare(pieces: input.map { [$0] }, limits: limits, "\(label), byte by byte") }
        }
    }

    /// The hand-written cases of the wire-format table, under both sets of limits.
    @Test(arguments: parserCases, [0, 1])
    func theWireFormatTableGivesTheSameEventsAsTheReference(_ row: ParserCase, limitsIndex: Int) {
        let input = Array(row.raw.utf8)
        compare(pieces: [input], limits: Self.limitsTable[limitsIndex].1, row.name)
        if input.count <= 2048 {  // (the longest, byte by byte, would take the reference seconds: it rescans what it has)
            compare(pieces: input.map { [$0] }, limits: Self.limitsTable[limitsIndex].1, "\(row.name), byte by byte")
        }
    }

    /// Feeds both parsers the same pieces, taking events after each until `needMore` or an error.
    func compare(pieces: [[UInt8]], limits: HTTPLimits, _ label: String) {
        var parser = HTTPRequestParser(limits: limits)
        var reference = ReferenceHTTPRequestParser(limits: limits)
        for piece in pieces {
            parser.append(piece)
            reference.append(piece)
            for _ in 0..<100 {
                let event = parser.next()
                let expected = reference.next()
                guard event == expected else {
                    Issue.record("\(label): \(event) where the reference gives \(expected)")
                    return
                }
                if case .request(let request) = event, case .request(let expectedRequest) = expected {
                    // `==` leaves out the fields derived from the target.
                    guard request.path == expectedRequest.path, request.rawPath == expectedRequest.rawPath,
                          request.query.map({ "\($0.name)=\($0.value)" }) == expectedRequest.query.map({ "\($0.name)=\($0.value)" })
                    else {
                        Issue.record("\(label): \(request) where the reference gives \(expectedRequest)")
                        return
                    }
                }
                guard parser.bufferedByteCount == reference.bufferedByteCount, parser.isMidRequest == reference.isMidRequest,
                      parser.isReadingBody == reference.isReadingBody
                else {
                    Issue.record("\(label): after \(event) the state differs from the reference's")
                    return
                }
                if case .error = event { return }
                if event == .needMore { break }
            }
        }
    }

    /// tchar by bitmask is tchar as the reference spells it out, for every byte.
    @Test func tokenBytesAreTheReferencesForEveryByte() {
        for byte in UInt8.min...UInt8.max {
            #expect(isTokenByte(byte) == ReferenceHTTPRequestParser.isTokenByte(byte), "byte \(byte)")
        }
    }

    /// The byte-wise name comparison answers as comparing `lowercased()` did, ASCII or not (the Kelvin
    /// sign lower-cases to an ASCII k, a dotted capital I to two scalars).
    @Test(arguments: [UInt64(1), 2, 3])
    func fieldNamesCompareAsWithLowercased(seed: UInt64) {
        let pieces = ["a", "A", "k", "K", "\u{212A}", "-", "z", "Z", "[", "{", "@", "`", "é", "É", "e\u{301}", "İ", "i", "ß", "ss", "0", " ", "\u{0}"]
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<3000 {
            let a = (0..<Int.random(in: 0...4, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            var b = a
            if Bool.random(using: &rng) {
                b = (0..<Int.random(in: 0...4, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            } else if Bool.random(using: &rng) {
                b = a.map { Bool.random(using: &rng) ? $0.uppercased() : $0.lowercased() }.joined()
            }
            #expect(HTTPHeaders.equalNames(a, b) == ReferenceHTTPRequestParser.equalNames(a, b), "\(a.debugDescription) vs \(b.debugDescription)")
        }
        for (a, b) in [("Content-Length", "content-length"), ("CONTENT-LENGTH", "content-length"), ("Content-Lengti", "content-length"),
                       ("\u{212A}", "k"), ("\u{212A}ab", "kab"), ("X@", "x`"), ("X[", "x{"), ("", "")] {
            #expect(HTTPHeaders.equalNames(a, b) == ReferenceHTTPRequestParser.equalNames(a, b), "\(a.debugDescription) vs \(b.debugDescription)")
        }
    }
}

/// Generates request bytes: mostly well-formed requests with the fields that frame a body, with
/// their names in mixed case and their values odd, and now and then a defect that a parser must refuse.
enum RequestGenerator {
    static let methods = ["GET", "PUT", "POST", "OPTIONS", "DELETE", "get", "G(T", "", "PU T"]
    static let targets = ["/feeds/a", "/feeds/a/events?lastEventId=x%2Ey&b", "/a%20b", "*", "http://h/feeds?x=1", "https://h", "http://h",
                          "feeds", "/\u{7F}", "/é", "/events?" + String(repeating: "e", count: 70), "/" + String(repeating: "a", count: 60), ""]
    static let versions = ["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1x", "http/1.1", "HTTP/11", "HTTP/1.", "HTTP/9.9"]
    static let contentLengths = ["0", "5", "13", "00005", " 5 ", "\t5\t", "5,5", "5, 5", "5, 6", "5,", ",5", "", " ", "-1", "+5", "1e3", "0x5",
                                 "\u{FF15}", "5\u{301}", "999999999999999999", "1234567890123456789", "9000000", "41", "40", "3 3"]
    static let transferEncodings = ["chunked", "Chunked", "CHUNKED", " chunked ", "gzip, chunked", "chunked, chunked", "", "identity", "chunked,"]
    static let values = ["x", "  x  ", "a\tb", "\t", "", "a\u{80}b", "é ", " é", " \u{301}x", "x \u{301}", "\u{301} x ", "100-continue",
                         "close", "keep-alive", "application/json", "a,b , c"]
    static let names = ["Content-Type", "Expect", "Expect", "Connection", "X-A", "Hos", "Content-Length-X"]
    /// Names that make a request invalid, or may: a second Host, framing fields beside others.
    static let badNames = ["X(A)", "Host ", "\u{212A}ost", "", "X-\u{7F}", "Host", "Content-Length", "Transfer-Encoding"]

    static func request(using rng: inout SeededGenerator) -> [UInt8] {
        var head = ""
        if Int.random(in: 0..<8, using: &rng) == 0 { head += "\r\n" }  // empty lines before the request line are ignored
        let method = Int.random(in: 0..<10, using: &rng) == 0 ? methods.randomElement(using: &rng)! : ["GET", "PUT", "POST"].randomElement(using: &rng)!
        let target = Int.random(in: 0..<5, using: &rng) == 0 ? targets.randomElement(using: &rng)! : "/feeds/a"
        let version = Int.random(in: 0..<10, using: &rng) == 0 ? versions.randomElement(using: &rng)! : "HTTP/1.1"
        let separator = Int.random(in: 0..<30, using: &rng) == 0 ? "  " : " "
        head += method + separator + target + " " + version + "\r\n"

        var fields: [(String, String)] = []
        if Int.random(in: 0..<20, using: &rng) != 0 { fields.append(("Host", "x")) }
        var length: Int?
        var chunked = false
        switch Int.random(in: 0..<10, using: &rng) {
        case 0...3:
            let value = Int.random(in: 0..<3, using: &rng) == 0 ? contentLengths.randomElement(using: &rng)! : String(Int.random(in: 0...30, using: &rng))
            fields.append(("Content-Length", value))
            length = Int(value.filter(\.isNumber)).map { min($0, 45) }
            if Int.random(in: 0..<6, using: &rng) == 0 {  // a second one, the same or not
                fields.append(("Content-Length", Bool.random(using: &rng) ? value : contentLengths.randomElement(using: &rng)!))
            }
        case 4...5:
            fields.append(("Transfer-Encoding", Int.random(in: 0..<3, using: &rng) == 0 ? transferEncodings.randomElement(using: &rng)! : "chunked"))
            chunked = true
            if Int.random(in: 0..<6, using: &rng) == 0 { fields.append(("Content-Length", "3")) }
        default:
            break
        }
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            let name = Int.random(in: 0..<12, using: &rng) == 0 ? badNames.randomElement(using: &rng)! : names.randomElement(using: &rng)!
            let value = Int.random(in: 0..<30, using: &rng) == 0 ? "a\u{7F}" : values.randomElement(using: &rng)!
            fields.insert((name, value), at: Int.random(in: 0...fields.count, using: &rng))
        }
        if Int.random(in: 0..<12, using: &rng) == 0 { fields.append(("X-Long", String(repeating: "v", count: Int.random(in: 40...200, using: &rng)))) }
        if Int.random(in: 0..<12, using: &rng) == 0 {
            fields += (0..<Int.random(in: 4...8, using: &rng)).map { ("X-\($0)", "v") }
        }
        for (name, value) in fields {
            // Names in mixed case: the framing fields are found whatever their case.
            let mixed = name.map { Int.random(in: 0..<3, using: &rng) == 0 ? $0.uppercased() : Int.random(in: 0..<3, using: &rng) == 0 ? $0.lowercased() : String($0) }.joined()
            let colon = Int.random(in: 0..<80, using: &rng) == 0 ? "" : ":"
            let space = [" ", "", "  ", "\t"].randomElement(using: &rng)!
            head += mixed + colon + space + value + "\r\n"
        }
        var bytes = Array(head.utf8)
        // A defect, now and then: obs-fold, a bare CR or LF, a NUL, a stray byte in the head.
        if Int.random(in: 0..<8, using: &rng) == 0 {
            let defects: [[UInt8]] = [Array(" folded\r\n".utf8), Array("\tfolded\r\n".utf8), [0x0D], [0x0A], [0], [0x80], [0xFF], [0x7F], Array("\r\r\n".utf8), [0x0D, 0x0A]]
            let defect = defects.randomElement(using: &rng)!
            let at = Bool.random(using: &rng) && bytes.count > 2 ? bytes.count - 2 : Int.random(in: 0...bytes.count, using: &rng)
            bytes.insert(contentsOf: defect, at: at)
        }
        bytes += Array("\r\n".utf8)
        if chunked {
            var body = ""
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                let size = Int.random(in: 1...12, using: &rng)
                body += String(size, radix: 16, uppercase: Bool.random(using: &rng)) + (Bool.random(using: &rng) ? ";ext=1" : "") + "\r\n"
                body += String(repeating: "c", count: size) + "\r\n"
            }
            body += "0\r\n" + (Bool.random(using: &rng) ? "Trailer: t\r\n" : "") + "\r\n"
            bytes += Array(body.utf8)
        } else if let length {
            // The body, perhaps short (the request stays unfinished) or with a bare LF in it.
            let count = Int.random(in: 0..<6, using: &rng) == 0 ? Int.random(in: 0...length, using: &rng) : length
            bytes += (0..<count).map { $0 == 1 ? 0x0A : UInt8(ascii: "b") }
        }
        return bytes
    }

    static func describe(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).debugDescription
    }
}
