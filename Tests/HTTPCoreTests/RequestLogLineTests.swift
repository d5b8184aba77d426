@testable import HTTPCore
import Logging
import Testing

/// Records what a request line writes, as text.
private struct RecordingSink: RequestLogLineSink {
    var message = ""
    var fields: [(key: String, value: String)] = []
    mutating func message(_ part: String) { message += part }
    mutating func message(_ number: Int) { message += String(number) }
    mutating func field(_ key: String, _ value: String) { fields.append((key, value)) }
    mutating func field(_ key: String, _ number: Int) { fields.append((key, String(number))) }
    mutating func field(_ key: String, _ value: Logger.MetadataValue) { fields.append((key, value.description)) }
}

struct RequestLogLineTests {
    @Test func theMessageIsTheRequestsShortLine() {
        let line = RequestLogLine(method: "PUT", path: "/feeds/a", status: 201, bytes: 57, milliseconds: 3)
        #expect(line.message == "PUT /feeds/a 201 57B 3ms")
        var sink = RecordingSink()
        line.write(to: &sink)
        #expect(sink.message == line.message)
    }

    @Test(arguments: [
        [:],
        ["feed": "a"],
        ["a": "first", "feed": "news", "zz": "last"],
        ["path": "/from/the/handler", "status": "999", "feed": "x"],  // the request's own fields win
        ["connection": "7", "n": "between", "q": "after ms and path", "t": "last", "bytes": "no", "ms": "no"],
    ] as [Logger.Metadata])
    func theWrittenFieldsAreTheMetadataInKeyOrder(handlerMetadata: Logger.Metadata) {
        let line = RequestLogLine(method: "GET", path: "/feeds/a", status: 404, bytes: 2, milliseconds: 0, handlerMetadata: handlerMetadata)
        var sink = RecordingSink()
        line.write(to: &sink)
        let oracle = line.metadata.sorted { $0.key < $1.key }
        #expect(sink.fields.map(\.key) == oracle.map(\.key))
        #expect(sink.fields.map(\.value) == oracle.map(\.value.description))
        #expect(line.metadata["path"] == "/feeds/a" && line.metadata["status"] == "404" && line.metadata["bytes"] == "2"
                && line.metadata["ms"] == "0" && line.metadata["method"] == "GET")
    }
}
