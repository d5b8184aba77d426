import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP socket to 127.0.0.1, for tests that talk to a real server on port 0. Use it from a
/// thread of its own (``onThread(_:)``), never on the cooperative pool the server's handlers need.
public final class TestSocket: Sendable {
    public let fd: Int32

    public init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestFailure("connect: errno \(code)")
        }
    }

    /// Sends all of `text`.
    public func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TestFailure("send: errno \(errno)") }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// The next bytes, or nil at the end of the stream.
    public func receive() throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16384)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw TestFailure("recv: errno \(errno)") }
        return count == 0 ? nil : Array(buffer[..<count])
    }

    public func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    public func close() { Glibc.close(fd) }
}

/// A test's failure, described.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs blocking work on a new thread and awaits its result.
public func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
