import HTTPServer
import Testing

struct ServerSentEventTests {
    @Test(arguments: [
        ("single line", "{\"a\":1}", "event: batch\nid: 7\ndata: {\"a\":1}\n\n"),
        ("newline splits data lines", "a\nb", "event: batch\nid: 7\ndata: a\ndata: b\n\n"),
        ("CRLF is one line break", "a\r\nb", "event: batch\nid: 7\ndata: a\ndata: b\n\n"),
        ("bare CR is a line break", "a\rb", "event: batch\nid: 7\ndata: a\ndata: b\n\n"),
        ("empty data", "", "event: batch\nid: 7\ndata: \n\n"),
    ])
    func eventFraming(name: String, data: String, expected: String) {
        let bytes = ServerSentEvent.encode(event: "batch", id: "7", data: Array(data.utf8))
        #expect(String(decoding: bytes, as: UTF8.self) == expected)
    }

    @Test func fieldsCannotInjectLines() {
        let bytes = ServerSentEvent.encode(event: "x\ny", id: "1\r\n2\0", data: Array("d".utf8))
        #expect(String(decoding: bytes, as: UTF8.self) == "event: xy\nid: 12\ndata: d\n\n")
    }

    @Test func commentsAndRetry() {
        #expect(String(decoding: ServerSentEvent.comment("heartbeat"), as: UTF8.self) == ": heartbeat\n\n")
        #expect(String(decoding: ServerSentEvent.retry(milliseconds: 2000), as: UTF8.self) == "retry: 2000\n\n")
    }
}
