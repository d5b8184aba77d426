import Testing
import TestSupport
@testable import TLSStreamClient

struct HTTPResponseParserTests {
    /// Parses `input` whole and returns the head's status, the body and whether it ended (after `finish` if `close`).
    static func parse(_ input: [UInt8], splits: [Int] = [], close: Bool = false) throws -> (status: Int?, body: [UInt8], ended: Bool) {
        var parser = HTTPResponseParser()
        var outputs: [HTTPResponseParser.Output] = []
        var start = 0
        for cut in splits + [input.count] where cut >= start {
            outputs += try parser.consume(input[start..<cut])
            start = cut
        }
        if close { outputs += try parser.finish() }
        var status: Int?
        var body: [UInt8] = []
        var ended = false
        for output in outputs {
            switch output {
            case .head(let code):
                #expect(status == nil && body.isEmpty, "one head, before the body")
                status = code
            case .body(let bytes):
                #expect(!ended)
                body += bytes
            case .end:
                #expect(!ended)
                ended = true
            }
        }
        return (status, body, ended)
    }

    /// RFC 9112 §7.1, §6.2, §6.3: framings, chunk extensions, trailers, interim responses, bare LFs.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 200, "hello world", true, false),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA;name=value\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n", 200, "0123456789", true, false),
        ("HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\nf \r\n0123456789abcde\r\n0;last\r\n\r\n", 200, "0123456789abcde", true, false),
        ("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n", 200, "abc", true, false),
        ("HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\n{}\r\nignored", 401, "{}\r\n", true, false),
        ("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", 204, "", true, false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", true, false),
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", true, false),
        ("\r\nHTTP/1.0 200\r\n\r\nuntil close", 200, "until close", true, true),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n1\r\nx\r\n0\r\n\r\n", 200, "x", true, false),
    ])
    func parses(_ input: String, _ status: Int, _ body: String, _ ended: Bool, _ close: Bool) throws {
        let result = try Self.parse(Array(input.utf8), close: close)
        #expect(result.status == status)
        #expect(result.body == Array(body.utf8))
        #expect(result.ended == ended)
    }

    @Test(arguments: [
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "ICY 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
        "HTTP/1.1 101 Switching Protocols\r\n\r\n",
    ])
    func refuses(_ input: String) {
        #expect(throws: HTTPResponseParser.ParseError.self) { try Self.parse(Array(input.utf8)) }
    }

    /// A connection closing mid-head or mid-body is an error; after a complete body it is not.
    @Test(arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Le", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", false),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", false),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", true),
    ])
    func closing(_ input: String, _ fine: Bool) {
        if fine {
            #expect(throws: Never.self) { try Self.parse(Array(input.utf8), close: true) }
        } else {
            #expect(throws: HTTPResponseParser.ParseError.self) { try Self.parse(Array(input.utf8), close: true) }
        }
    }

    @Test func headTooLarge() {
        var parser = HTTPResponseParser(maximumHeadSize: 64)
        #expect(throws: HTTPResponseParser.ParseError.self) {
            _ = try parser.consume(Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 100)).utf8))
        }
    }

    /// Property: a random chunked body (random chunk sizes, extensions, trailers) cut at random places
    /// decodes to the same bytes as the oracle, the body before encoding.
    @Test(arguments: 0..<50)
    func randomSplits(_ seed: UInt64) throws {
        var random = SeededGenerator(seed: seed &+ 0x7157)
        let body = (0..<Int.random(in: 0...3000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        var wire = Array("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var offset = 0
        while offset < body.count {
            let size = min(body.count - offset, Int.random(in: 1...700, using: &random))
            let hex = String(size, radix: 16, uppercase: Bool.random(using: &random))
            wire += Array((hex + (Bool.random(using: &random) ? ";ext=1" : "") + "\r\n").utf8)
            wire += body[offset..<(offset + size)]
            wire += Array("\r\n".utf8)
            offset += size
        }
        wire += Array(("0\r\n" + (Bool.random(using: &random) ? "Trailer: x\r\n" : "") + "\r\n").utf8)
        let splits = (0..<Int.random(in: 0...20, using: &random)).map { _ in Int.random(in: 0...wire.count, using: &random) }.sorted()
        let result = try Self.parse(wire, splits: splits)
        #expect(result.status == 200)
        #expect(result.body == body, "seed \(seed)")
        #expect(result.ended)
        // Byte by byte gives the same.
        let bytewise = try Self.parse(wire, splits: Array(0..<wire.count))
        #expect(bytewise.body == body && bytewise.ended)
    }
}
