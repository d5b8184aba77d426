@testable import EpollRuntime
import Foundation
import HTTPCore
import Logging
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)))
struct LoopCoreTests {
    /// Small writes run on the loop that read them; reads and big writes on the pool.
    @Test(arguments: [
        ("PUT", 1_500, true), ("POST", 0, true), ("PATCH", LoopCore.inlineBodyLimit, true), ("DELETE", 0, true),
        ("PUT", LoopCore.inlineBodyLimit + 1, false), ("GET", 0, false), ("HEAD", 0, false), ("OPTIONS", 0, false),
    ] as [(String, Int, Bool)])
    func smallWritesRunOnTheLoop(method: String, bodyBytes: Int, onLoop: Bool) {
        #expect(LoopCore.runsOnLoop(method: method, bodyBytes: bodyBytes) == onLoop)
    }

    actor Turnstile {
        private(set) var passes = 0
        func pass() { passes += 1 }
    }

    /// Pipelined writes whose handler answers without suspending (started inline, inside the
    /// connection's read) and one that suspends on an actor are each answered once, in order.
    @Test func writesAnsweredBeforeTheirTaskSuspendsKeepTheirOrder() async throws {
        let logger = Logger(label: "test", factory: { SwiftLogNoOpLogHandler($0) })
        let server = try HTTPServer(configuration: .init(port: 0, logger: logger))
        let turnstile = Turnstile()
        let port = try server.start { request in
            if request.path.hasPrefix("/wait") { await turnstile.pass() }
            return HTTPResponse(status: .ok, body: Array("\(request.method) \(request.path) \(request.body.count)".utf8))
        }
        let paths = ["/a", "/wait1", "/b", "/c", "/wait2", "/d"]
        let pipelined = paths.map { "PUT \($0) HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc" }.joined()
        let bodies = try await Self.exchange(port: port, send: pipelined, responses: paths.count)
        #expect(bodies == paths.map { "PUT \($0) 3" })
        #expect(await turnstile.passes == 2)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in server.shutdown(timeout: 1) { done.resume() } }
    }

    /// Sends `text` on a new connection and reads `responses` answers with a Content-Length body
    /// each, on a thread of its own.
    static func exchange(port: UInt16, send text: String, responses: Int) async throws -> [String] {
        try await onThread {
            let socket = try TestSocket(port: port)
            defer { socket.close() }
            try socket.send(text)
            var received: [UInt8] = []
            var bodies: [String] = []
            while bodies.count < responses {
                // Take every complete answer in what has arrived.
                while let headEnd = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    let head = String(decoding: received[..<headEnd.lowerBound], as: UTF8.self)
                    guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                          let length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else {
                        throw TestFailure("no Content-Length in \(head)")
                    }
                    guard received.count >= headEnd.upperBound + length else { break }
                    bodies.append(String(decoding: received[headEnd.upperBound..<(headEnd.upperBound + length)], as: UTF8.self))
                    received.removeFirst(headEnd.upperBound + length)
                }
                if bodies.count == responses { break }
                guard let chunk = try socket.receive() else { throw TestFailure("closed after \(bodies.count) answers") }
                received += chunk
            }
            return bodies
        }
    }
}
