import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import Foundation
import EpollRuntime
import Logging
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real server on port 0 with the feed API, and a blocking HTTP/1.1 client that runs on its own
/// threads (never on Swift's cooperative pool, which the server's handlers need).
final class TestServer: Sendable {
    let server: HTTPServer
    let registry: FeedRegistry
    let hosted: HostedFeeds
    let port: UInt16
    let api: FeedAPI

    /// `configure` changes the API's options (made with `token`, without compression).
    init(token: String? = nil, logger: Logger = Logger(label: "test", factory: { SwiftLogNoOpLogHandler($0) }), requestLog: (any RequestLog)? = nil,
         replayLimit: Int = 64, configure: (inout FeedAPI.Options) -> Void = { _ in }) throws {
        server = try HTTPServer(configuration: .init(port: 0, logger: logger, requestLog: requestLog))
        registry = FeedRegistry(replayLimit: replayLimit, transport: server)
        hosted = HostedFeeds(registry: registry)
        var options = FeedAPI.Options(token: token, compression: false)
        configure(&options)
        let api = FeedAPI(registry: registry, hosted: hosted, files: nil, options: options, serverMetrics: { nil })
        self.api = api
        port = try server.start { request in await api.handle(request) }
    }

    func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            server.shutdown(timeout: 1) { continuation.resume() }
        }
    }

    struct Reply: Sendable {
        var status: Int
        var body: String
        /// The header section (after the status line), as sent.
        var head = ""
        var json: JSONValue? { try? JSONParser.parse(Array(body.utf8)) }

        /// The value of the header `name` (any case), if sent.
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n") {
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            return nil
        }
    }

    /// One request on a new connection (`Connection: close`); the reply is read to the end.
    /// `headers`: more header lines (`Name: value`).
    func request(_ method: String, _ path: String, body: String = "", headers: [String] = []) async throws -> Reply {
        let port = port
        let extra = headers.map { $0 + "\r\n" }.joined()
        let text = try await onThread {
            let socket = try TestSocket(port: port)
            defer { socket.close() }
            try socket.send("\(method) \(path) HTTP/1.1\r\nHost: test\r\nContent-Length: \(body.utf8.count)\r\n\(extra)Connection: close\r\n\r\n\(body)")
            var received: [UInt8] = []
            while let chunk = try socket.receive() { received += chunk }
            return String(decoding: received, as: UTF8.self)
        }
        guard let head = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ").dropFirst().first ?? "") else {
            throw TestFailure("not an HTTP response: \(text.prefix(200))")
        }
        return Reply(status: status, body: String(text[head.upperBound...]), head: String(text[..<head.lowerBound]))
    }

    /// The events of `GET path` as they arrive: (type, data) for every event with data.
    func subscribe(_ path: String) async throws -> EventSubscription {
        let socket = try await onThread { [port] in try TestSocket(port: port) }
        try socket.send("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n")
        return EventSubscription(socket: socket)
    }
}

/// A server-sent event stream read on a thread of its own.
final class EventSubscription: Sendable {
    let socket: TestSocket
    let events: AsyncStream<(type: String, data: JSONValue)>

    init(socket: TestSocket) {
        self.socket = socket
        let (stream, continuation) = AsyncStream.makeStream(of: (type: String, data: JSONValue).self)
        events = stream
        Thread.detachNewThread {
            var buffer = ""
            var headDone = false
            while let chunk = try? socket.receive() {
                buffer += String(decoding: chunk, as: UTF8.self)
                if !headDone, let head = buffer.range(of: "\r\n\r\n") {
                    buffer.removeSubrange(..<head.upperBound)
                    headDone = true
                }
                while headDone, let end = buffer.range(of: "\n\n") {
                    let block = buffer[..<end.lowerBound]
                    buffer.removeSubrange(..<end.upperBound)
                    var type = "message"
                    var data: String?
                    for line in block.split(separator: "\n") {
                        if line.hasPrefix("event: ") { type = String(line.dropFirst(7)) }
                        if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                    }
                    if let data, let json = try? JSONParser.parse(Array(data.utf8)) { continuation.yield((type, json)) }
                }
            }
            continuation.finish()
            socket.close()
        }
    }

    /// The next `count` events.
    func next(_ count: Int) async -> [(type: String, data: JSONValue)] {
        var collected: [(type: String, data: JSONValue)] = []
        for await event in events {
            collected.append(event)
            if collected.count == count { break }
        }
        return collected
    }

    func close() { socket.shutdown() }
}
