import COpenSSL

/// Where the certificate and key are (PEM files).
public struct TLSConfiguration: Sendable {
    public var certificatePath: String
    public var privateKeyPath: String
    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }
}

/// Why TLS could not be set up.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var errorDescription: String? { message }
    public var description: String { message }
}

/// The server's OpenSSL context (placeholder until TLS lands).
final class TLSContext: @unchecked Sendable {
    init(configuration: TLSConfiguration) throws {
        throw TLSError(message: "TLS is not available in this build")
    }
    func makeTransport(fd: Int32) -> Transport? { nil }
}
