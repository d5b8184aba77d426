#if canImport(Glibc)
import Glibc
#endif

/// Where a connection's bytes go: straight to the socket, or through TLS.
protocol Transport: AnyObject {
    /// Advances the handshake (plain sockets have none).
    func handshake() -> HandshakeStatus
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Socket.IOResult
    func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Socket.IOResult
    /// Whether decrypted bytes are waiting that the socket's readiness will not announce.
    var hasBufferedInput: Bool { get }
    /// Frees per-connection resources (the socket itself is closed by the connection).
    func release()
}

enum HandshakeStatus: Equatable {
    case done
    case wantRead
    case wantWrite
    case failed(String)
}

/// A plain TCP socket.
final class PlainTransport: Transport {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func handshake() -> HandshakeStatus { .done }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Socket.IOResult { try Socket.read(fd, into: buffer) }
    func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Socket.IOResult { try Socket.write(fd, buffer) }
    var hasBufferedInput: Bool { false }
    func release() {}
}
