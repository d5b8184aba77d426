/// The limits the request parser and the connections enforce. Every one has a deliberate answer:
///
/// | limit                 | default | when exceeded                                  |
/// |-----------------------|---------|------------------------------------------------|
/// | `maxRequestLine`      | 8 KiB   | 414 URI Too Long, connection closed            |
/// | `longRequestLines`    | `/events`: 16 KiB | 414, closed (per path)               |
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
    /// Paths whose request line may be longer than ``maxRequestLine``, and their limit: the multi-feed
    /// event stream `/events` lists up to 100 feeds with their positions in its query (about 11.4 KB
    /// at worst), so its request line may take 16 KiB. Matched on the raw path, without the query.
    public var longRequestLines: [String: Int] = ["/events": 16 * 1024]
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

    /// The longest request line accepted for any path.
    public var longestRequestLine: Int { longRequestLines.values.reduce(maxRequestLine, max) }

    /// The request-line limit for `line` (the bytes of a request line, whole or its beginning): the
    /// limit of its target's path, or nil while the path is not all there yet (then
    /// ``longestRequestLine`` bounds it). `complete`: whether `line` is the whole line.
    /// - Complexity: O(n) in the length of the line.
    public func requestLineLimit(_ line: ArraySlice<UInt8>, complete: Bool) -> Int? {
        if longRequestLines.isEmpty { return maxRequestLine }
        guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return complete ? maxRequestLine : nil }
        var target = line[(space + 1)...]
        var pathEnd = target.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: " ") }
        if pathEnd == nil && !complete {
            // The path so far can still become a long one only if one starts with it.
            if target.starts(with: "http".utf8) { return nil }  // perhaps an absolute form
            let partial = String(decoding: target, as: UTF8.self)
            return longRequestLines.keys.contains { $0.hasPrefix(partial) } ? nil : maxRequestLine
        }
        // Absolute form (RFC 9112 §3.2.2): the path starts at the first slash after the authority.
        for scheme in ["http://", "https://"] where target.starts(with: scheme.utf8) {
            let authority = target.dropFirst(scheme.utf8.count)
            guard let slash = authority.firstIndex(of: UInt8(ascii: "/")), pathEnd.map({ slash < $0 }) ?? true else {
                return pathEnd == nil && !complete ? nil : maxRequestLine
            }
            target = authority[slash...]
        }
        pathEnd = pathEnd ?? target.endIndex
        let path = String(decoding: target[target.startIndex..<max(target.startIndex, pathEnd!)], as: UTF8.self)
        return longRequestLines[path] ?? maxRequestLine
    }
}
