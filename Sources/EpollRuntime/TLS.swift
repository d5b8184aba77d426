import COpenSSL
import OpenSSLSupport
#if canImport(Glibc)
import Glibc
#endif

/// Where the certificate chain and private key are (PEM files).
public struct TLSConfiguration: Sendable {
    /// The PEM certificate chain, the server's certificate first.
    public var certificatePath: String
    /// The PEM private key of the certificate.
    public var privateKeyPath: String
    /// The certificate chain and key at these paths (read when the server is created).
    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }
}

/// Why TLS could not be set up, in words a user can act on.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for the user.
    public var message: String
    /// The ``message``.
    public var errorDescription: String? { message }
    /// The ``message``.
    public var description: String { message }
}

/// The server's OpenSSL context: TLS 1.2 and 1.3 only, the server's cipher preference, no
/// renegotiation, ALPN `http/1.1`.
///
/// Sendable as ``OpenSSLContext`` is: configured here, then only used to create connections.
final class TLSContext: Sendable {
    private let handle: OpenSSLContext

    init(configuration: TLSConfiguration) throws(TLSError) {
        for (flag, path) in [("--tls-cert", configuration.certificatePath), ("--tls-key", configuration.privateKeyPath)] {
            guard access(path, R_OK) == 0 else {
                throw TLSError(message: "cannot read \(flag) '\(path)': \(String(cString: strerror(errno)))")
            }
        }
        guard let handle = OpenSSLContext(method: TLS_server_method()) else {
            throw TLSError(message: "cannot create a TLS context: \(OpenSSLContext.lastError())")
        }
        self.handle = handle
        let context = handle.pointer
        _ = diffstream_SSL_CTX_set_max_proto_version(context, diffstream_TLS1_3_VERSION())
        _ = diffstream_SSL_CTX_set_options(context, diffstream_SSL_OP_CIPHER_SERVER_PREFERENCE() | diffstream_SSL_OP_NO_RENEGOTIATION())
        _ = diffstream_SSL_CTX_set_mode(context, diffstream_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER() | diffstream_SSL_MODE_ENABLE_PARTIAL_WRITE())
        _ = SSL_CTX_set_cipher_list(context, "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!MD5:!DSS")
        diffstream_SSL_CTX_select_http11(context)
        guard SSL_CTX_use_certificate_chain_file(context, configuration.certificatePath) == 1 else {
            throw TLSError(message: "--tls-cert '\(configuration.certificatePath)' is not a usable PEM certificate: \(OpenSSLContext.lastError())")
        }
        guard SSL_CTX_use_PrivateKey_file(context, configuration.privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            let reason = OpenSSLContext.lastError()
            if reason.contains("mismatch") {
                throw TLSError(message: "--tls-key '\(configuration.privateKeyPath)' does not match the certificate in --tls-cert (\(reason))")
            }
            throw TLSError(message: "--tls-key '\(configuration.privateKeyPath)' is not a usable PEM private key: \(reason)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError(message: "--tls-key does not match the certificate in --tls-cert: \(OpenSSLContext.lastError())")
        }
    }

    func makeTransport(fd: Int32) -> Transport? {
        guard let ssl = SSL_new(handle.pointer) else { return nil }
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
        return TLSTransport(ssl: ssl)
    }
}

/// One TLS connection over a non-blocking socket; the loop's readiness drives the handshake.
final class TLSTransport: Transport {
    private var ssl: OpaquePointer?

    init(ssl: OpaquePointer) { self.ssl = ssl }

    func handshake() -> HandshakeStatus {
        guard let ssl else { return .failed("released") }
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: return .failed(OpenSSLContext.lastError())
        }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Socket.IOResult {
        guard let ssl else { return .closed }
        let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if count > 0 { return .bytes(Int(count)) }
        return status(SSL_get_error(ssl, count))
    }

    func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> Socket.IOResult {
        guard let ssl else { return .closed }
        let count = SSL_write(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if count > 0 { return .bytes(Int(count)) }
        return status(SSL_get_error(ssl, count))
    }

    private func status(_ error: Int32) -> Socket.IOResult {
        switch error {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wouldBlock
        default:
            ERR_clear_error()
            return .closed
        }
    }

    var hasBufferedInput: Bool { ssl.map { SSL_pending($0) > 0 } ?? false }

    func release() {
        guard let ssl else { return }
        _ = SSL_shutdown(ssl)  // one non-blocking attempt to send close_notify
        ERR_clear_error()
        SSL_free(ssl)
        self.ssl = nil
    }
}
