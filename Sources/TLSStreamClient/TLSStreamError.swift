/// Why a stream over ``TLSStreamTransport`` failed: the call that failed and what it said.
public struct TLSStreamError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The failing call (`connect`, `SSL_connect`, `recv`, `SSL_CTX_load_verify_locations`, …).
    public let call: String
    /// What went wrong, e.g. `Connection refused (errno 111)` or an OpenSSL error string.
    public let message: String

    public init(call: String, message: String) {
        self.call = call
        self.message = message
    }

    public var description: String { "\(message) (\(call))" }
}
