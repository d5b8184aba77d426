import FeedCore
import HTTPAPI
import ViewModelHosting
import Foundation
import EpollRuntime
import Logging
import LogLines
import Synchronization
import Testing

/// The events a ``CapturingLogHandler`` kept.
private final class LogEvents: Sendable {
    let events = Mutex<[LogEvent]>([])
}

/// A swift-log handler of a program's own: keeps every event.
private struct CapturingLogHandler: LogHandler {
    let box: LogEvents
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    subscript(metadataKey key: String) -> Logger.MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { box.events.withLock { $0.append(event) } }
}

/// The request's log line through the server: to a program's own swift-log handler (the default
/// request log), and to `LineLogHandler` given as the request log, as the `diffstream` command does
/// (written directly, or through its `log(event:)` when it has a metadata provider).
struct RequestLogTests {
    @Test func aProgramsOwnHandlerGetsTheRequestLineWithItsMetadata() async throws {
        let box = LogEvents()
        let server = try TestServer(logger: Logger(label: "test") { _ in CapturingLogHandler(box: box) })
        _ = try await server.request("PUT", "/feeds/logged", body: #"{"sections":[]}"#)
        await server.stop()
        let event = try #require(box.events.withLock { $0 }.first { $0.message.description.hasPrefix("PUT ") })
        #expect(event.level == .info)
        #expect(event.message.description.hasPrefix("PUT /feeds/logged 201 "))
        let metadata = try #require(event.metadata)
        #expect(metadata["method"] == "PUT" && metadata["path"] == "/feeds/logged" && metadata["status"] == "201" && metadata["feed"] == "logged")
        #expect(metadata["bytes"] != nil && metadata["ms"] != nil)
    }

    /// A path is logged as sent: a percent-encoded line break stays `%0A`, so a request cannot write a
    /// second, forged line into the log.
    @Test func aPathIsLoggedAsSentNeverDecoded() async throws {
        let box = LogEvents()
        let server = try TestServer(logger: Logger(label: "test") { _ in CapturingLogHandler(box: box) })
        let forged = "/x%0A2026-11-26T00:00:00Z%20info%20forged"
        _ = try await server.request("GET", forged)
        await server.stop()
        let event = try #require(box.events.withLock { $0 }.first { $0.message.description.hasPrefix("GET ") })
        #expect(event.message.description.hasPrefix("GET \(forged) 404 "))
        #expect(!event.message.description.contains("\n"))
        #expect(event.metadata?["path"] == .string(forged))
    }

    @Test(arguments: [false, true])
    func lineLogHandlerWritesTheDocumentedLineWithOrWithoutAProvider(withProvider: Bool) async throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let provider = withProvider ? Logger.MetadataProvider { ["node": "n1"] } : nil
        let handler = LineLogHandler(label: "diffstream", fileDescriptor: fds[1], metadataProvider: provider)
        let server = try TestServer(logger: Logger(label: "diffstream") { _ in handler }, requestLog: handler)
        _ = try await server.request("PUT", "/feeds/logged", body: #"{"sections":[]}"#)
        await server.stop()
        close(fds[1])
        let output = String(decoding: FileHandle(fileDescriptor: fds[0]).readDataToEndOfFile(), as: UTF8.self)
        let line = try #require(output.split(separator: "\n").first { $0.contains(" PUT ") })
        // Each field once: the message shows the method, path, status, bytes, duration and feed.
        let node = withProvider ? " node=n1" : ""
        let pattern = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ info \[diffstream\] PUT /feeds/logged 201 \d+B \d+ms(.*)$/#
        let match = try #require(try pattern.wholeMatch(in: String(line)))
        #expect(match.1 == node)
    }

    /// A JSON line is structured: its metadata keeps every field of the request, the feed included.
    @Test func aJSONRequestLineKeepsEveryField() async throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let handler = LineLogHandler(label: "diffstream", format: .json, fileDescriptor: fds[1])
        let server = try TestServer(logger: Logger(label: "diffstream") { _ in handler }, requestLog: handler)
        _ = try await server.request("PUT", "/feeds/logged", body: #"{"sections":[]}"#)
        await server.stop()
        close(fds[1])
        let output = FileHandle(fileDescriptor: fds[0]).readDataToEndOfFile()
        let lines = try output.split(separator: UInt8(ascii: "\n")).map { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
        let line = try #require(lines.first { ($0?["message"] as? String)?.hasPrefix("PUT ") == true } ?? nil)
        let metadata = try #require(line["metadata"] as? [String: String])
        #expect(Set(metadata.keys) == ["bytes", "feed", "method", "ms", "path", "status"])
        #expect(metadata["feed"] == "logged" && metadata["method"] == "PUT" && metadata["path"] == "/feeds/logged" && metadata["status"] == "201")
    }
}
