import HTTPCore
import Testing

/// One row of the wire-format table: raw bytes in, the expected outcome.
struct ParserCase: CustomTestStringConvertible, Sendable {
    enum Expected: Sendable, Equatable {
        case request(method: String, path: String, body: String)
        case status(Int)
        case needMore
    }

    var name: String
    var raw: String
    var expected: Expected
    var testDescription: String { name }

    init(_ name: String, _ raw: String, _ expected: Expected) {
        self.name = name
        self.raw = raw
        self.expected = expected
    }
}

let longTarget = "/" + String(repeating: "a", count: 8200)
let manyHeaders = (0..<101).map { "X-\($0): v\r\n" }.joined()
let bigHeader = "X-Big: " + String(repeating: "b", count: 33 * 1024) + "\r\n"

let parserCases: [ParserCase] = [
    .init("simple GET", "GET /feeds HTTP/1.1\r\nHost: x\r\n\r\n", .request(method: "GET", path: "/feeds", body: "")),
    .init("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", .request(method: "GET", path: "/", body: "")),
    .init("leading empty line is ignored", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", .request(method: "GET", path: "/", body: "")),
    .init("Content-Length body", "PUT /feeds/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", .request(method: "PUT", path: "/feeds/a", body: "hello")),
    .init("repeated equal Content-Length", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", .request(method: "PUT", path: "/a", body: "hi")),
    .init("chunked body", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n", .request(method: "POST", path: "/a", body: "hello world")),
    .init("percent-decoded path", "GET /a%20b HTTP/1.1\r\nHost: x\r\n\r\n", .request(method: "GET", path: "/a b", body: "")),
    .init("absolute-form target", "GET http://example.com/feeds?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n", .request(method: "GET", path: "/feeds", body: "")),
    .init("incomplete head", "GET / HTTP/1.1\r\nHost: x\r\n", .needMore),
    .init("incomplete body", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf", .needMore),
    .init("request line too long", "GET \(longTarget) HTTP/1.1\r\nHost: x\r\n\r\n", .status(414)),
    .init("request line too long before CRLF", "GET \(longTarget)", .status(414)),
    .init("too many header fields", "GET / HTTP/1.1\r\nHost: x\r\n\(manyHeaders)\r\n", .status(431)),
    .init("header section too large", "GET / HTTP/1.1\r\nHost: x\r\n\(bigHeader)\r\n", .status(431)),
    .init("header section too large, unfinished", "GET / HTTP/1.1\r\nHost: x\r\n\(bigHeader)", .status(431)),
    .init("body over the limit", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n", .status(413)),
    .init("chunked body over the limit", "PUT /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n900000\r\n", .status(413)),
    .init("Content-Length and Transfer-Encoding", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .status(400)),
    .init("differing Content-Lengths", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", .status(400)),
    .init("Content-Length list that differs", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\nabcd", .status(400)),
    .init("negative Content-Length", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", .status(400)),
    .init("non-numeric Content-Length", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n", .status(400)),
    .init("unknown transfer coding", "PUT /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .status(501)),
    .init("Transfer-Encoding in HTTP/1.0", "PUT /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .status(400)),
    .init("obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  continued\r\n\r\n", .status(400)),
    .init("bare CR in a header", "GET / HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n", .status(400)),
    .init("bare LF in a header", "GET / HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n", .status(400)),
    .init("space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", .status(400)),
    .init("bad field name", "GET / HTTP/1.1\r\nHost: x\r\nX(A): 1\r\n\r\n", .status(400)),
    .init("header without colon", "GET / HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n", .status(400)),
    .init("NUL in a header value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n", .status(400)),
    .init("HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", .status(505)),
    .init("garbage version", "GET / HTTX/1.1\r\nHost: x\r\n\r\n", .status(400)),
    .init("lowercase version", "GET / http/1.1\r\nHost: x\r\n\r\n", .status(400)),
    .init("missing Host in HTTP/1.1", "GET / HTTP/1.1\r\n\r\n", .status(400)),
    .init("two Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .status(400)),
    .init("extra space in request line", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", .status(400)),
    .init("target not starting with slash", "GET feeds HTTP/1.1\r\nHost: x\r\n\r\n", .status(400)),
    .init("bad method token", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", .status(400)),
    .init("bad chunk size", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .status(400)),
    .init("chunk without CRLF", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", .status(400)),
    .init("negative chunk size", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\n", .status(400)),
    .init("chunk size with a sign", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\n{}\r\n0\r\n\r\n", .status(400)),
    .init("chunk size with a space", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n 2\r\n{}\r\n0\r\n\r\n", .status(400)),
    .init("upper-case hex chunk size", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", .request(method: "POST", path: "/a", body: "0123456789")),
    .init("request line of exactly the limit, its LF not here yet", "GET /" + String(repeating: "a", count: 8178) + " HTTP/1.1\r", .needMore),
    .init("bare LF line endings only, head unfinished", "GET / HTTP/1.1\nHost: x\n\n", .status(400)),
    .init("bare LF in a body is fine", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n{\n}", .request(method: "PUT", path: "/a", body: "{\n}")),
]

struct HTTPRequestParserTests {
    func parse(_ raw: String, limits: HTTPLimits = HTTPLimits()) -> HTTPRequestParser.Event {
        var parser = HTTPRequestParser(limits: limits)
        parser.append(Array(raw.utf8))
        return parser.next()
    }

    @Test(arguments: parserCases)
    func wireFormatTable(_ row: ParserCase) {
        let event = parse(row.raw)
        switch (row.expected, event) {
        case (.request(let method, let path, let body), .request(let request)):
            #expect(request.method == method)
            #expect(request.path == path)
            #expect(String(decoding: request.body, as: UTF8.self) == body)
        case (.status(let code), .error(let error)):
            #expect(error.status.code == code, "\(error.detail)")
        case (.needMore, .needMore):
            break
        default:
            Issue.record("expected \(row.expected), got \(event)")
        }
    }

    /// `/events` (the multi-feed stream) takes a request line of up to 16 KiB; every other path 8 KiB.
    @Test(arguments: [
        ("/events?", 16 * 1024, true), ("/events?", 16 * 1024 + 1, false), ("/events?", 8 * 1024 + 1, true),
        ("/feeds/a/events?", 8 * 1024, true), ("/feeds/a/events?", 8 * 1024 + 1, false), ("/eventsx?", 8 * 1024 + 1, false),
        ("/", 8 * 1024 + 1, false), ("http://h/events?", 16 * 1024, true), ("http://h/x?", 8 * 1024 + 1, false),
    ])
    func theRequestLineLimitIsPerPath(prefix: String, lineLength: Int, accepted: Bool) {
        let head = "GET " + prefix
        let tail = " HTTP/1.1"
        let line = head + String(repeating: "a", count: lineLength - head.utf8.count - tail.utf8.count) + tail
        #expect(line.utf8.count == lineLength)
        let raw = Array((line + "\r\nHost: x\r\n\r\n").utf8)
        for chunk in [raw.count, 1000] {  // all at once, and arriving in pieces (refused before the CRLF)
            var parser = HTTPRequestParser()
            var outcome = HTTPRequestParser.Event.needMore
            var offset = 0
            while offset < raw.count, outcome == .needMore {
                parser.append(raw[offset..<min(raw.count, offset + chunk)])
                offset += chunk
                outcome = parser.next()
            }
            switch outcome {
            case .request: #expect(accepted, "\(prefix) \(lineLength)")
            case .error(let error): #expect(!accepted && error.status.code == 414, "\(prefix) \(lineLength): \(error)")
            default: Issue.record("\(prefix) \(lineLength): \(outcome)")
            }
        }
    }

    @Test func aLongPathIsRefusedAsSoonAsItsPathShowsItIsNotALongOne() {
        var parser = HTTPRequestParser()
        parser.append(Array(("GET /feeds?" + String(repeating: "a", count: 8 * 1024 + 10)).utf8))
        #expect(parser.next() == .error(HTTPParseError(.uriTooLong, "the request line is longer than 8192 bytes")))
        var events = HTTPRequestParser()
        events.append(Array(("GET /events?" + String(repeating: "a", count: 8 * 1024 + 10)).utf8))
        #expect(events.next() == .needMore, "up to 16 KiB may follow")
        events.append(Array(String(repeating: "a", count: 8 * 1024).utf8))
        #expect(events.next() == .error(HTTPParseError(.uriTooLong, "the request line is longer than 16384 bytes")))
    }

    @Test func bytesArrivingOneAtATimeGiveTheSameRequest() {
        let raw = Array("PUT /feeds/a?lastEventId=x%2Ey HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc".utf8)
        var parser = HTTPRequestParser()
        var result: HTTPRequest?
        for byte in raw {
            parser.append([byte])
            if case .request(let request) = parser.next() { result = request }
        }
        #expect(result?.body == Array("abc".utf8))
        #expect(result?.queryValue("lastEventId") == "x.y")
    }

    /// Query values are percent-decoded (RFC 3986 §2.1), a `+` stays a `+` (a token may hold one), and a
    /// malformed escape keeps the raw text.
    @Test(arguments: [("a+b", "a+b"), ("a%2Bb", "a+b"), ("a%20b", "a b"), ("x%2Ey", "x.y"), ("%zz", "%zz")])
    func queryValuesArePercentDecodedAndAPlusStaysAPlus(raw: String, decoded: String) {
        var parser = HTTPRequestParser()
        parser.append(Array("GET /feeds/a/events?authorization=\(raw) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        guard case .request(let request) = parser.next() else { Issue.record("no request"); return }
        #expect(request.queryValue("authorization") == decoded)
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        var parser = HTTPRequestParser()
        parser.append(Array("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3".utf8))
        var paths: [String] = []
        while case .request(let request) = parser.next() { paths.append(request.path) }
        #expect(paths == ["/1", "/2"])
        #expect(parser.isMidRequest)
    }

    @Test func headersKeepOrderAndRepeats() {
        guard case .request(let request) = parse("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\nX-B:  3 \r\n\r\n") else {
            Issue.record("no request")
            return
        }
        #expect(request.headers.values("X-A") == ["1", "2"])
        #expect(request.headers["x-b"] == "3")
        #expect(request.headers.fields.map(\.name) == ["Host", "X-A", "x-a", "X-B"])
    }

    @Test func expectContinueIsAnnouncedOnceBeforeTheBody() {
        var parser = HTTPRequestParser()
        parser.append(Array("PUT /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        #expect(parser.next() == .expectContinue)
        #expect(parser.next() == .needMore)
        parser.append(Array("ok".utf8))
        guard case .request(let request) = parser.next() else { Issue.record("no request"); return }
        #expect(request.body == Array("ok".utf8))
    }

    @Test func afterAnErrorTheParserStaysFailed() {
        var parser = HTTPRequestParser()
        parser.append(Array("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        guard case .error = parser.next() else { Issue.record("expected an error"); return }
        guard case .error = parser.next() else { Issue.record("expected the error again"); return }
    }

    @Test func smallerLimitsAreHonoured() {
        var limits = HTTPLimits()
        limits.maxBodyBytes = 4
        guard case .error(let error) = parse("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", limits: limits) else {
            Issue.record("expected 413")
            return
        }
        #expect(error.status == .contentTooLarge)
    }

    /// A request refused after its head was read keeps its method and path (as sent, no query) for
    /// the log line; one refused in its head has none.
    @Test(arguments: [
        ("PUT /feeds/big?token=x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 413, "PUT", "/feeds/big"),
        ("POST /feeds/a%20b/actions/add HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\nContent-Length: 9\r\n\r\n", 413, "POST", "/feeds/a%20b/actions/add"),
        ("PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n", 413, "PUT", "/c"),
        ("PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "PUT", "/c"),
        ("PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "PUT", "/c"),
        ("PUT /c HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "PUT", "/c"),
        ("GET /c HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, nil, nil),
        ("GET /c HTTP/2.0\r\nHost: x\r\n\r\n", 505, nil, nil),
    ] as [(String, Int, String?, String?)])
    func aRequestRefusedAfterItsHeadKeepsItsMethodAndPath(raw: String, status: Int, method: String?, path: String?) {
        var limits = HTTPLimits()
        limits.maxBodyBytes = 4
        var parser = HTTPRequestParser(limits: limits)
        #expect(parser.refusedHead == nil)
        parser.append(Array(raw.utf8))
        guard case .error(let error) = parser.next() else { Issue.record("expected \(status)"); return }
        #expect(error.status.code == status)
        #expect(parser.refusedHead?.method == method && parser.refusedHead?.path == path)
        guard case .error(let again) = parser.next() else { Issue.record("expected the error again"); return }
        #expect(again == error && parser.refusedHead?.method == method)
        #expect(!parser.isMidRequest && !parser.isReadingBody)
    }

    @Test func theHeadOfARequestWhoseBodyIsStillComingIsKnown() {
        var parser = HTTPRequestParser()
        parser.append(Array("PUT /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf".utf8))
        #expect(parser.next() == .needMore)
        #expect(parser.refusedHead?.method == "PUT" && parser.refusedHead?.path == "/slow")
        parser.append(Array("-done".utf8) + [UInt8(ascii: "!")])
        guard case .request(let request) = parser.next() else { Issue.record("expected the request"); return }
        #expect(request.body.count == 10 && parser.refusedHead == nil)
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() {
        #expect(HTTPRequest(method: "GET", target: "/", version: .http11).wantsKeepAlive)
        #expect(!HTTPRequest(method: "GET", target: "/", version: .http11, headers: ["Connection": "close"]).wantsKeepAlive)
        #expect(!HTTPRequest(method: "GET", target: "/", version: .http10).wantsKeepAlive)
        #expect(HTTPRequest(method: "GET", target: "/", version: .http10, headers: ["Connection": "Keep-Alive"]).wantsKeepAlive)
    }
}
