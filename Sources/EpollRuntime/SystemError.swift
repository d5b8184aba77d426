#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: its name and `errno`, so a log line says exactly what went wrong.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var errorDescription: String? {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }

    public var description: String { errorDescription ?? call }
}

/// Runs a system call, retrying on EINTR, and turns -1 into a ``SystemError``.
@inline(__always)
func systemCall<T: BinaryInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemError(name, errno: code)
    }
}
