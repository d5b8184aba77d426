#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: its name and `errno`, so a log line says exactly what went wrong.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call that failed, with what it was called on where that helps (`bind(127.0.0.1:80)`).
    public var call: String
    /// The `errno` it failed with.
    public var errno: Int32

    /// The failure of `call` with `errno`.
    public init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The call, the system's words for the errno, and the errno.
    public var errorDescription: String? {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }

    /// The same as ``errorDescription``.
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
