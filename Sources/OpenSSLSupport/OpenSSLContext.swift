import COpenSSL

/// An OpenSSL context (`SSL_CTX`) that refuses versions older than TLS 1.2, freed with its owner: what
/// the server's `TLSContext` (HTTPServer) and the client's `TLSClientContext` (TLSStreamClient) configure
/// further, and the one reader of OpenSSL's error queue.
///
/// `@unchecked Sendable`: the context is configured once, by its owner's initialiser, and then only
/// used to create connections (`SSL_new`), which OpenSSL allows from any thread.
public final class OpenSSLContext: @unchecked Sendable {
    /// The `SSL_CTX`.
    public let pointer: OpaquePointer

    /// A context for `method` (`TLS_server_method()`, `TLS_client_method()`); nil when OpenSSL cannot
    /// make one (``lastError()`` says why).
    public init?(method: OpaquePointer) {
        guard let pointer = SSL_CTX_new(method) else { return nil }
        self.pointer = pointer
        _ = diffstream_SSL_CTX_set_min_proto_version(pointer, diffstream_TLS1_2_VERSION())
    }

    deinit { SSL_CTX_free(pointer) }

    /// The oldest error on OpenSSL's (thread-local) queue, as text, and the queue cleared; "unknown
    /// error" when it is empty.
    public static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
