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

/// The direct entry point (a line written field by field, no dictionary) writes what `Logger.log`
/// writes through the handler.
struct LogLineWriterTests {
    /// The lines `body` writes through a handler on a pipe, without their timestamps.
    static func lines(format: LogFormat, level: Logger.Level = .info, _ body: (LineLogHandler) -> Void) throws -> [String] {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        body(LineLogHandler(label: "http", format: format, level: level, fileDescriptor: fds[1]))
        close(fds[1])
        let output = String(decoding: FileHandle(fileDescriptor: fds[0]).readDataToEndOfFile(), as: UTF8.self)
        // Drop the timestamps (the two calls may straddle a second).
        return output.split(separator: "\n").map { line in
            line.hasPrefix("{") ? String(line.drop { $0 != "," }) : String(line.drop { $0 != " " })
        }
    }

    static let metadata: Logger.Metadata = [
        "bytes": "57", "feed": "a b", "method": "PUT", "ms": "-3", "path": "/feeds/a", "status": "201", "quote": "\"q\"\u{7F}",
        "list": ["x", .stringConvertible(12)], "nested": ["k": ["1"]], "empty": "",
    ]

    static func write(_ line: inout LogLineWriter) {
        line.message("PUT ")
        line.message("/feeds/\"a\"\t")
        line.message(" ")
        line.message(201)
        line.message(" ")
        line.message(1_234_567_890)
        line.message("B")
        line.field("bytes", 57)
        line.field("empty", "")
        line.field("feed", "a b")
        line.field("list", ["x", .stringConvertible(12)])
        line.field("method", "PUT")
        line.field("ms", -3)
        line.field("nested", ["k": ["1"]])
        line.field("path", "/feeds/a")
        line.field("quote", "\"q\"\u{7F}")
        line.field("status", .string("201"))
    }

    @Test(arguments: LogFormat.allCases)
    func aLineWrittenDirectlyIsTheLineOfTheSameMessageAndMetadata(format: LogFormat) throws {
        let lines = try Self.lines(format: format) { handler in
            #expect(handler.writesLinesDirectly)
            handler.log(level: .info, Self.write)
            Logger(label: "http") { _ in handler }.info("PUT /feeds/\"a\"\t 201 1234567890B", metadata: Self.metadata)
        }
        #expect(lines.count == 2)
        #expect(lines.first == lines.last)
    }

    @Test(arguments: LogFormat.allCases)
    func aLineWithoutFieldsEndsWithItsMessage(format: LogFormat) throws {
        let lines = try Self.lines(format: format) { handler in
            handler.log(level: .warning) { $0.message("m") }
        }
        #expect(lines == [format == .text ? " warning [http] m" : #","level":"warning","label":"http","message":"m"}"#])
    }

    @Test func nothingBelowTheLevel() throws {
        let lines = try Self.lines(format: .text, level: .warning) { handler in
            handler.log(level: .info) { $0.message("m") }
        }
        #expect(lines.isEmpty)
    }

    @Test func aHandlerWithMetadataOfItsOwnDoesNotWriteDirectly() {
        var handler = LineLogHandler(label: "l")
        handler[metadataKey: "zone"] = "z"
        #expect(!handler.writesLinesDirectly)
        let provided = LineLogHandler(label: "l", metadataProvider: Logger.MetadataProvider { [:] })
        #expect(!provided.writesLinesDirectly)
    }

    @Test(arguments: [0, 7, 10, 99, -1, -10, 1_000_000, Int.max, Int.min])
    func numbersAreTheirDecimalDigits(number: Int) {
        var bytes: [UInt8] = []
        LogLineWriter.appendDecimal(number, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == String(number))
    }
}
