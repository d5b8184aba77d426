import COpenSSL

/// An OpenSSL client context: TLS 1.2 or newer, and the certificate authorities to trust (a PEM file, or
/// OpenSSL's default paths), or no verification at all (`insecure`).
///
/// `@unchecked Sendable`: the `SSL_CTX` is configured once in `init` and then only used to create
/// connections (`SSL_new`), which OpenSSL allows from any thread.
final class TLSClientContext: @unchecked Sendable {
    let context: OpaquePointer
    let insecure: Bool

    init(caFile: String?, insecure: Bool) throws(TLSStreamError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSStreamError(call: "SSL_CTX_new", message: "cannot create a TLS context: \(Self.lastError())")
        }
        self.context = context
        self.insecure = insecure
        _ = diffstream_SSL_CTX_set_min_proto_version(context, diffstream_TLS1_2_VERSION())
        if insecure {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    throw TLSStreamError(call: "SSL_CTX_load_verify_locations", message: "cannot read the CA file \(caFile): \(Self.lastError())")
                }
            } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                throw TLSStreamError(call: "SSL_CTX_set_default_verify_paths", message: "cannot load the system's certificate authorities: \(Self.lastError())")
            }
        }
    }

    deinit { SSL_CTX_free(context) }

    /// The oldest queued OpenSSL error as text (and the queue cleared), or "unknown error".
    static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
