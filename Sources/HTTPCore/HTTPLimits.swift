/// The limits the request parser and the connections enforce. Every one has a deliberate answer:
///
/// | limit                 | default | when exceeded                                  |
/// |-----------------------|---------|------------------------------------------------|
/// | `maxRequestLine`      | 8 KiB   | 414 URI Too Long, connection closed            |
/// | `maxHeaderBytes`      | 32 KiB  | 431 Request Header Fields Too Large, closed    |
/// | `maxHeaderCount`      | 100     | 431, closed                                    |
/// | `maxBodyBytes`        | 8 MiB   | 413 Content Too Large, closed                  |
/// | `headerTimeout`       | 10 s    | connection closed (slowloris)                  |
/// | `bodyTimeout`         | 30 s    | 408 Request Timeout, closed                    |
/// | `idleTimeout`         | 60 s    | idle keep-alive connection closed              |
/// | `writeTimeout`        | 30 s    | a response that cannot be written: closed      |
/// | `handshakeTimeout`    | 10 s    | a TLS handshake that does not finish: closed   |
public struct HTTPLimits: Sendable, Equatable {
    /// The longest request line (method, target, version), in bytes (RFC 9112 §3: SHOULD support 8000).
    public var maxRequestLine = 8 * 1024
    /// The largest header section (after the request line), in bytes.
    public var maxHeaderBytes = 32 * 1024
    /// The most header fields in one request.
    public var maxHeaderCount = 100
    /// The largest request body, in bytes.
    public var maxBodyBytes = 8 * 1024 * 1024
    /// Seconds from a request's first byte until its header section must be complete.
    public var headerTimeout: Double = 10
    /// Seconds a request body may take to arrive.
    public var bodyTimeout: Double = 30
    /// Seconds a keep-alive connection may sit idle between requests.
    public var idleTimeout: Double = 60
    /// Seconds a response may wait for the client to read it before the connection is dropped.
    public var writeTimeout: Double = 30
    /// Seconds a TLS handshake may take.
    public var handshakeTimeout: Double = 10

    public init() {}
}
