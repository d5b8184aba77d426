import COpenSSL
import OpenSSLSupport

/// An OpenSSL client context: TLS 1.2 or newer, and the certificate authorities to trust (a PEM file, or
/// OpenSSL's default paths), or no verification at all (`insecure`).
///
/// Sendable as ``OpenSSLContext`` is: configured here, then only used to create connections.
final class TLSClientContext: Sendable {
    private let handle: OpenSSLContext
    let insecure: Bool
    /// The `SSL_CTX`.
    var context: OpaquePointer { handle.pointer }

    init(caFile: String?, insecure: Bool) throws(TLSStreamError) {
        guard let handle = OpenSSLContext(method: TLS_client_method()) else {
            throw TLSStreamError(call: "SSL_CTX_new", message: "cannot create a TLS context: \(OpenSSLContext.lastError())")
        }
        self.handle = handle
        self.insecure = insecure
        let context = handle.pointer
        if insecure {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    throw TLSStreamError(call: "SSL_CTX_load_verify_locations", message: "cannot read the CA file \(caFile): \(OpenSSLContext.lastError())")
                }
            } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                throw TLSStreamError(call: "SSL_CTX_set_default_verify_paths", message: "cannot load the system's certificate authorities: \(OpenSSLContext.lastError())")
            }
        }
    }
}
