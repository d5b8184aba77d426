import Foundation
@testable import LogLines
import Logging
import Testing

struct LineLogHandlerTests {
    static let time = "2026-11-25T13:41:34Z"

    @Test func aTextLineKeepsTheOldShapeAndAddsSortedMetadata() {
        let line = LineLogHandler.line(format: .text, timestamp: Self.time, level: .info, label: "diffstream",
                                       message: "PUT /feeds/a 201 0B 3ms",
                                       metadata: ["status": "201", "feed": "a", "ms": "3", "bytes": "0"])
        #expect(line == "2026-11-25T13:41:34Z info [diffstream] PUT /feeds/a 201 0B 3ms bytes=0 feed=a ms=3 status=201\n")
    }

    @Test func aTextLineWithoutMetadataEndsWithTheMessage() {
        let line = LineLogHandler.line(format: .text, timestamp: Self.time, level: .warning, label: "diffstream",
                                       message: "diffstream listening on http://127.0.0.1:8080", metadata: [:])
        #expect(line == "2026-11-25T13:41:34Z warning [diffstream] diffstream listening on http://127.0.0.1:8080\n")
    }

    @Test(arguments: [
        ("plain", "plain"), ("two words", "\"two words\""), ("", "\"\""), ("a=b", "\"a=b\""), ("say \"hi\"", "\"say \\\"hi\\\"\""),
    ])
    func textValuesThatAreNotOneWordAreQuoted(value: String, written: String) {
        let line = LineLogHandler.line(format: .text, timestamp: Self.time, level: .info, label: "l", message: "m", metadata: ["k": "\(value)"])
        #expect(line == "2026-11-25T13:41:34Z info [l] m k=\(written)\n")
    }

    @Test func aJSONLineIsOneObjectWithTheDocumentedKeys() throws {
        let line = LineLogHandler.line(format: .json, timestamp: Self.time, level: .error, label: "diffstream",
                                       message: "GET /feeds/a \"quoted\"\nnext", metadata: ["feed": "a", "status": "404", "list": ["x", "y"]])
        #expect(line.hasSuffix("}\n"))
        #expect(line.dropLast().contains("\n") == false)  // one line, whatever the message holds
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["timestamp"] as? String == Self.time)
        #expect(object["level"] as? String == "error")
        #expect(object["label"] as? String == "diffstream")
        #expect(object["message"] as? String == "GET /feeds/a \"quoted\"\nnext")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["feed"] as? String == "a")
        #expect(metadata["status"] as? String == "404")
        #expect(metadata["list"] as? [String] == ["x", "y"])
    }

    @Test func aJSONLineWithoutMetadataHasNoMetadataKey() throws {
        let line = LineLogHandler.line(format: .json, timestamp: Self.time, level: .info, label: "l", message: "m", metadata: [:])
        #expect(line == "{\"timestamp\":\"2026-11-25T13:41:34Z\",\"level\":\"info\",\"label\":\"l\",\"message\":\"m\"}\n")
    }

    @Test(arguments: [("\u{1}", "\"\\u0001\""), ("tab\there", "\"tab\\there\""), ("back\\slash", "\"back\\\\slash\"")])
    func jsonStringsEscapeControlCharacters(text: String, escaped: String) {
        #expect(LineLogHandler.jsonString(text) == escaped)
    }

    @Test(arguments: LogFormat.allCases)
    func aLoggerWritesOneLinePerMessageToItsFileDescriptor(format: LogFormat) throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var logger = Logger(label: "test") { LineLogHandler(label: $0, format: format, level: .info, fileDescriptor: fds[1]) }
        logger[metadataKey: "node"] = "n1"
        logger.debug("not written: below the level")
        logger.info("GET /feeds/a 200 2B 1ms", metadata: ["feed": "a", "status": "200"])
        close(fds[1])
        let output = String(decoding: FileHandle(fileDescriptor: fds[0]).readDataToEndOfFile(), as: UTF8.self)
        let lines = output.split(separator: "\n")
        #expect(lines.count == 1)
        let line = String(try #require(lines.first))
        #expect(!line.contains("not written"))
        switch format {
        case .text:
            #expect(line.hasSuffix(" info [test] GET /feeds/a 200 2B 1ms feed=a node=n1 status=200"))
        case .json:
            #expect(line.contains("\"metadata\":{\"feed\":\"a\",\"node\":\"n1\",\"status\":\"200\"}"))
        }
    }

    @Test func theTimestampIsUTCToTheSecond() {
        let stamp = LineLogHandler.timestamp()
        #expect(stamp.count == 20)
        #expect(stamp.hasSuffix("Z") && stamp.dropFirst(10).first == "T")
    }
}
