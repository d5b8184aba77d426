import Testing
@testable import DiffStreamClient

struct SSEParserTests {
    /// WHATWG HTML §9.2.6 examples and edge cases: line endings, BOM, fields, comments, retry.
    @Test(arguments: [
        ("data: a\n\n", [SSEMessage.event(SSEEvent(data: "a"))]),
        ("data: a\r\n\r\n", [.event(SSEEvent(data: "a"))]),
        ("data: a\r\r", [.event(SSEEvent(data: "a"))]),
        ("\u{FEFF}data: a\n\n", [.event(SSEEvent(data: "a"))]),
        ("data:a\ndata: b\n\n", [.event(SSEEvent(data: "a\nb"))]),
        ("event: snapshot\nid: ds1.x.1\ndata: {}\n\n", [.event(SSEEvent(type: "snapshot", data: "{}", lastEventID: "ds1.x.1"))]),
        ("event: x\n\n", []),  // no data: not dispatched
        ("data\n\n", [.event(SSEEvent(data: ""))]),
        (": heartbeat 15\n\n", [.comment("heartbeat 15")]),
        (":heartbeat\n", [.comment("heartbeat")]),
        ("retry: 2000\n", [.retry(2000)]),
        ("retry: 20x\n", []),
        ("retry:\n", []),
        ("id: a\u{0}b\ndata: x\n\n", [.event(SSEEvent(data: "x"))]),  // an id with NUL is ignored
        ("data: x", []),  // an incomplete event at the end is not dispatched
        ("foo: bar\ndata: x\n\n", [.event(SSEEvent(data: "x"))]),
    ])
    func parses(_ input: String, _ expected: [SSEMessage]) {
        var parser = SSEParser()
        #expect(parser.feed(Array(input.utf8)) == expected)
    }

    /// The same stream cut at every byte gives the same messages (a CR at the end of a chunk waits for its LF).
    @Test func chunkBoundaries() {
        let stream = Array("retry: 2000\r\n: heartbeat 2\r\n\r\nevent: batch\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\ndata: b\r\rdata: c\n\n".utf8)
        var whole = SSEParser()
        let expected = whole.feed(stream)
        #expect(expected.count == 5)
        for cut in 0...stream.count {
            var parser = SSEParser()
            let got = parser.feed(stream[..<cut]) + parser.feed(stream[cut...])
            #expect(got == expected, "cut at \(cut)")
        }
        var bytewise = SSEParser()
        #expect(stream.flatMap { bytewise.feed([$0]) } == expected)
    }

    /// The last event id persists across events that set none (§9.2.6).
    @Test func lastEventIDPersists() {
        var parser = SSEParser()
        let messages = parser.feed(Array("id: 1\ndata: a\n\ndata: b\n\n".utf8))
        #expect(messages == [.event(SSEEvent(data: "a", lastEventID: "1")), .event(SSEEvent(data: "b", lastEventID: "1"))])
    }
}
