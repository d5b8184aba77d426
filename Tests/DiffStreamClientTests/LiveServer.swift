import Foundation
import TestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
@testable import DiffStreamClient

/// The real `diffstream` binary (next to the test bundle, or `DIFFSTREAM_BIN`), started on a port
/// (0: a free one, read from its "listening on" line). Shared by the tests that need a server.
final class LiveServer {
    let process: Process
    let port: Int
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["DIFFSTREAM_BIN"] { return URL(fileURLWithPath: path) }
        let bundle = Bundle.main.bundleURL
        for directory in [bundle.deletingLastPathComponent(), bundle, bundle.deletingLastPathComponent().deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("diffstream")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return URL(fileURLWithPath: ".build/debug/diffstream")
    }

    struct StartFailed: Error, CustomStringConvertible {
        var description: String
    }

    init(_ flags: [String], port: Int = 0) throws {
        let process = Process()
        process.executableURL = Self.binary
        let publicDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("diffstream-client-public")
        try? FileManager.default.createDirectory(at: publicDirectory, withIntermediateDirectories: true)
        var arguments = ["--host", "127.0.0.1", "--port", String(port), "--public", publicDirectory.path]
        if !flags.contains("--data") { arguments += ["--data", "none"] }
        process.arguments = arguments + flags
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DIFFSTREAM_") }
        environment["DIFFSTREAM_LOG_LEVEL"] = "info"
        process.environment = environment
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Read stderr until the "listening on" line names the port; then drain it on a thread of its own.
        var text = ""
        var found: Int?
        let handle = pipe.fileHandleForReading
        while found == nil {
            let data = handle.availableData
            if data.isEmpty { throw StartFailed(description: "diffstream exited before listening: \(text)") }
            text += String(decoding: data, as: UTF8.self)
            if let range = text.range(of: #"listening on http://127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                found = Int(text[range].split(separator: ":").last!)
            }
        }
        Thread.detachNewThread { while !handle.availableData.isEmpty {} }
        self.process = process
        self.port = found!
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// SIGKILL, and wait for the process to be gone.
    func kill9() {
        signal(SIGKILL)
        ChildProcess.waitForExit(process)
    }

    func stop() {
        if process.isRunning {
            signal(SIGCONT)
            process.terminate()
            ChildProcess.waitForExit(process)
        }
    }

    deinit { stop() }

    /// A request with a JSON body; the status and body.
    func request(_ method: String, _ path: String, body: String? = nil, token: String? = nil) async throws -> (Int, String) {
        var request = URLRequest(url: url.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body.map { Data($0.utf8) }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (status, data) = try await FeedClient(baseURL: url).send(request)
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// `diffstream token …`: a signed token.
    static func token(secretFile: String, subscribe: [String], lifetime: Int) throws -> String {
        let process = Process()
        process.executableURL = binary
        process.arguments = ["--jwt-secret-file", secretFile, "token", "--lifetime", String(lifetime)] + subscribe.flatMap { ["--subscribe", $0] }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        ChildProcess.waitForExit(process)
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func temporaryDirectory(_ name: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("diffstream-client-\(name)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

extension AsyncThrowingStream.Iterator {
    /// The next element that `select` maps to a value, skipping others (the sequence must not end).
    mutating func next<T>(where select: (Element) -> T?) async throws -> T {
        while let element = try await next() {
            if let value = select(element) { return value }
        }
        throw LiveServer.StartFailed(description: "the sequence ended")
    }
}
