@testable import EpollRuntime
import Foundation
import HTTPCore
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

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
    /// each, on a thread of its own (blocking calls stay off Swift's pool).
    static func exchange(port: UInt16, send text: String, responses: Int) async throws -> [String] {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<[String], any Error>) in
            Thread {
                do { done.resume(returning: try exchangeBlocking(port: port, send: text, responses: responses)) } catch { done.resume(throwing: error) }
            }.start()
        }
    }

    struct ClientError: Error { var message: String }

    static func exchangeBlocking(port: UInt16, send text: String, responses: Int) throws -> [String] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(message: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ClientError(message: "connect: \(errno)") }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else { throw ClientError(message: "send") }
        var received: [UInt8] = []
        var bodies: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bodies.count < responses {
            // Take every complete answer in what has arrived.
            while let headEnd = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: received[..<headEnd.lowerBound], as: UTF8.self)
                guard let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
                      let length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else {
                    throw ClientError(message: "no Content-Length in \(head)")
                }
                guard received.count >= headEnd.upperBound + length else { break }
                bodies.append(String(decoding: received[headEnd.upperBound..<(headEnd.upperBound + length)], as: UTF8.self))
                received.removeFirst(headEnd.upperBound + length)
            }
            if bodies.count == responses { break }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw ClientError(message: "closed after \(bodies.count) answers") }
            received += buffer[..<count]
        }
        return bodies
    }
}
