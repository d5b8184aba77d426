/// Where a Redis server is and how to log in: `redis://[user:password@]host[:port][/db]`.
///
/// The form of the `redis` URI scheme (IANA provisional registration; RFC 3986 §3 for the parts):
/// the port defaults to 6379 and the database to 0; `user` and `password` are percent-decoded
/// (RFC 3986 §2.1), so a password may hold `@` or `:` as `%40` and `%3A`; an IPv6 host is written in
/// brackets (RFC 3986 §3.2.2). `:password@` alone logs in as the default user. `rediss://` (TLS) and
/// `redis+sentinel://` are refused: hiredis 0.14 has neither TLS nor Sentinel.
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The database `SELECT`ed after connecting.
    public var database: Int
    /// The ACL user (Redis 6 and later); nil logs in as the default user.
    public var user: String?
    /// Sent with `AUTH`; nil sends no `AUTH`.
    public var password: String?

    public init(host: String, port: Int = 6379, database: Int = 0, user: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.password = password
    }

    /// Parses a URL; the error says what is wrong with it.
    public init(parsing text: String) throws(RedisURLError) {
        let schemeEnd = text.range(of: "://")
        guard let schemeEnd else { throw .notAURL(text: Self.redacted(text)) }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "redis" else { throw .unsupportedScheme(scheme) }
        var rest = Substring(text[schemeEnd.upperBound...])
        if let mark = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { throw .unsupportedPart(String(rest[mark...]).hasPrefix("?") ? "a query" : "a fragment") }
        var path = Substring("")
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var user: String?, password: String?
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = info.firstIndex(of: ":") else { throw .userWithoutPassword }
            let name = try Self.percentDecoded(info[..<colon], part: "user")
            user = name.isEmpty ? nil : name
            password = try Self.percentDecoded(info[info.index(after: colon)...], part: "password")
        }
        var host: Substring, portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .badHost(String(rest)) }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.isEmpty { portText = nil } else if after.hasPrefix(":") { portText = after.dropFirst() } else { throw .badHost(String(rest)) }
            guard host.contains(":") else { throw .badHost(String(rest)) }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
            portText = nil
        }
        guard !host.isEmpty else { throw .missingHost }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" || $0 == ":" || $0 == "%" }) else { throw .badHost(String(host)) }
        var port = 6379
        if let portText {
            guard let value = Self.decimal(portText), (1...65535).contains(value) else { throw .badPort(String(portText)) }
            port = value
        }
        var database = 0
        if !path.isEmpty {
            guard let value = Self.decimal(path) else { throw .badDatabase(String(path)) }
            database = value
        }
        self.init(host: String(host), port: port, database: database, user: user, password: password)
    }

    /// Digits only (no sign, no spaces), at most 9 of them.
    private static func decimal(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 9, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    /// RFC 3986 §2.1: `%` and two hex digits is a byte; the result must be UTF-8.
    private static func percentDecoded(_ text: Substring, part: String) throws(RedisURLError) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(Self.hex), let low = iterator.next().flatMap(Self.hex) else { throw .badPercentEncoding(part: part) }
            bytes.append(high << 4 | low)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw .badPercentEncoding(part: part) }
        return decoded
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A URL's text with whatever sits between `://` and `@` hidden, for error messages.
    static func redacted(_ text: String) -> String {
        guard let start = text.range(of: "://"), let at = text[start.upperBound...].lastIndex(of: "@") else { return text }
        return text[..<start.upperBound] + "***" + text[at...]
    }

    /// `host:port` (IPv6 in brackets), for messages.
    public var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The URL with the password hidden: safe to log.
    public var description: String {
        let credentials = password == nil ? "" : "\(user ?? ""):***@"
        return "redis://\(credentials)\(endpoint)/\(database)"
    }
}

/// What is wrong with a `--redis` URL.
public enum RedisURLError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAURL(text: String)
    case unsupportedScheme(String)
    case unsupportedPart(String)
    case userWithoutPassword
    case badPercentEncoding(part: String)
    case missingHost
    case badHost(String)
    case badPort(String)
    case badDatabase(String)

    public var description: String {
        let form = "expected redis://[user:password@]host[:port][/db]"
        return switch self {
        case .notAURL(let text): "'\(text)' is not a URL: \(form)"
        case .unsupportedScheme(let scheme) where scheme == "rediss": "rediss:// (TLS) is not supported: hiredis 0.14 has no TLS; \(form)"
        case .unsupportedScheme(let scheme): "the scheme '\(scheme)://' is not supported: \(form)"
        case .unsupportedPart(let part): "the URL has \(part), which is not supported: \(form)"
        case .userWithoutPassword: "the URL names a user without a password: write user:password@ (or :password@ for the default user)"
        case .badPercentEncoding(let part): "the \(part) in the URL has a '%' not followed by two hex digits, or is not UTF-8"
        case .missingHost: "the URL has no host: \(form)"
        case .badHost(let host): "'\(host)' is not a host name or address (an IPv6 address goes in brackets)"
        case .badPort(let port): "'\(port)' is not a port (1 to 65535)"
        case .badDatabase(let db): "'\(db)' is not a database number (the path after the port is the database, e.g. /0)"
        }
    }
}
