import HTTPCore
import Testing
import TestSupport

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

    /// Seeded data full of line breaks, against a client's reading (WHATWG HTML §9.2.6): the lines of
    /// the event, each `data:` value joined with LF, give back the data with every CRLF, CR and LF as LF.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func dataComesBackAsAClientReadsIt(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let alphabet: [UInt8] = [0x61, 0x0D, 0x0A, 0x7B, 0xC3, 0xA9]
        for _ in 0..<200 {
            let data = (0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            let bytes = ServerSentEvent.encode(event: "batch", id: "7", data: data)
            #expect(bytes == ServerSentEvent.encode(event: "batch", id: "7", data: data[...]), "the generic form agrees")
            #expect(bytes.suffix(2) == [0x0A, 0x0A])
            let lines = bytes.dropLast(2).split(separator: 0x0A, omittingEmptySubsequences: false)
            #expect(!lines.contains { $0.contains(0x0D) }, "no CR left to split a line")
            let values = lines.filter { $0.starts(with: Array("data: ".utf8)) }.map { Array($0.dropFirst(6)) }
            #expect(lines.count == values.count + 2, "event, id, then only data lines")
            var expected: [UInt8] = []
            var index = 0
            while index < data.count {
                if data[index] == 0x0D {
                    expected.append(0x0A)
                    index += index + 1 < data.count && data[index + 1] == 0x0A ? 2 : 1
                } else {
                    expected.append(data[index])
                    index += 1
                }
            }
            #expect(Array(values.joined(separator: [0x0A])) == expected, "\(data)")
        }
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
