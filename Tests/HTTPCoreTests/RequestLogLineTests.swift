@testable import HTTPCore
import Logging
import Testing

/// Records what a request line writes, as text.
private struct RecordingSink: RequestLogLineSink {
    var isStructured = true
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

    /// A text line shows each field once: what its message shows (method, path, status, bytes,
    /// duration, and the feed when the path names it as is) is not repeated as `key=value`.
    @Test(arguments: [
        ("/feeds/news", ["feed": "news"], ""),
        ("/feeds/news/events", ["feed": "news"], ""),
        ("/feeds/news/actions/add", ["feed": "news", "zz": "last"], "zz=last"),
        ("/feeds/n%65ws", ["feed": "news"], "feed=news"),  // sent percent-encoded: the path does not show it as is
        ("/feeds/newsroom", ["feed": "news"], "feed=news"),
        ("/feeds/new", ["feed": "news"], "feed=news"),
        ("/other/news", ["feed": "news"], "feed=news"),
        ("/feeds/a", ["a": "first", "bytes": "no", "method": "no", "ms": "no", "path": "no", "status": "no"], "a=first"),
        ("/feeds/a", [:], ""),
    ] as [(String, Logger.Metadata, String)])
    func aTextLineWritesOnlyTheFieldsItsMessageDoesNotShow(path: String, handlerMetadata: Logger.Metadata, fields: String) {
        let line = RequestLogLine(method: "PUT", path: path, status: 400, bytes: 85, milliseconds: 0, handlerMetadata: handlerMetadata)
        var text = RecordingSink(isStructured: false)
        line.write(to: &text)
        #expect(text.message == "PUT \(path) 400 85B 0ms")
        #expect(text.fields.map { "\($0.key)=\($0.value)" }.joined(separator: " ") == fields)
        #expect(text.fields.map(\.key) == line.unshownMetadata.keys.sorted())
        // A structured line keeps every field.
        var structured = RecordingSink()
        line.write(to: &structured)
        #expect(structured.fields.map(\.key) == line.metadata.keys.sorted())
    }
}
