import Foundation
import TestSupport
import Testing
import Redis
#if canImport(Glibc)
import Glibc
#endif

/// A `redis-server` of a test's own: a free port on loopback, a temporary directory, AOF with
/// `appendfsync always`, `DEBUG` allowed. Started by ``start()``, which returns once the server logs
/// that it accepts connections; stopped (SIGKILL) and its directory removed by ``stop()``.
final class RedisTestServer: Sendable {
    /// Where `redis-server` is, or nil when it is not installed (the tests that need it are skipped).
    static let executable: String? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/opt/homebrew/bin/redis-server"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isInstalled: Bool { executable != nil }
    static let skipReason: Comment = "redis-server is not installed (apt-get install redis-server): the tests against a real Redis are skipped"

    let port: Int
    let directory: String
    private let process: Process
    var url: RedisURL { RedisURL(host: "127.0.0.1", port: port) }

    private init(port: Int, directory: String, process: Process) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts a server; a port taken between our probe and redis's bind is tried again with another.
    static func start() throws -> RedisTestServer {
        signal(SIGPIPE, SIG_IGN)  // the tests write on connections the server killed, from their own threads
        for _ in 0..<5 {
            if let server = try startOnce() { return server }
        }
        throw TestServerError("redis-server did not start on any of five free ports")
    }

    private static func startOnce() throws -> RedisTestServer? {
        guard let executable else { throw TestServerError("redis-server is not installed") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("diffstream-redis-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let port = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                             "--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "yes",
                             "--daemonize", "no", "--logfile", ""]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // Read the log until it says it is ready, or the process ends (the port was taken).
        let reader = output.fileHandleForReading
        var log = Data()
        while true {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            log.append(chunk)
            if String(decoding: log, as: UTF8.self).contains("Ready to accept connections") {
                // Keep draining the pipe so redis never blocks on a full one.
                Thread { while !reader.availableData.isEmpty {} }.start()
                return RedisTestServer(port: port, directory: directory, process: process)
            }
        }
        ChildProcess.waitForExit(process)
        try? FileManager.default.removeItem(atPath: directory)
        if String(decoding: log, as: UTF8.self).contains("Address already in use") { return nil }
        throw TestServerError("redis-server exited: \(String(decoding: log, as: UTF8.self))")
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            ChildProcess.waitForExit(process)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A port the kernel says is free (bound to 0, read back, closed).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestServerError("socket: errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw TestServerError("bind: errno \(errno)") }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        guard named == 0 else { throw TestServerError("getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `body` with a fresh server, stopped afterwards whatever happens.
    static func with<T>(_ body: (RedisTestServer) async throws -> T) async throws -> T {
        let server = try start()
        defer { server.stop() }
        return try await body(server)
    }
}

/// A listener that accepts connections (in the kernel's backlog) and never answers: a Redis that hangs.
final class SilentListener {
    let port: Int
    private let socket: Int32

    init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0, listen(socket, 8) == 0 else { throw TestServerError("bind/listen: errno \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        self.socket = socket
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }
}

struct TestServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
