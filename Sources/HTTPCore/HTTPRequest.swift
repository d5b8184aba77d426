/// A parsed HTTP/1.x request.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The request target as sent (origin form, e.g. `/feeds/home?x=1`).
    public var target: String
    /// The percent-decoded path, without the query.
    public var path: String
    /// The raw (still percent-encoded) path, for routing decisions that must see encoded slashes.
    public var rawPath: String
    /// The query parameters, percent-decoded, in order.
    public var query: [(name: String, value: String)]
    /// `1.0` or `1.1` as (major, minor).
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: String, target: String, version: HTTPVersion = .http11, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
        // Without a query or escapes, `target`, `rawPath` and `path` share one string's storage.
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            rawPath = String(target[..<mark])
            query = PercentDecoding.queryItems(String(target[target.utf8.index(after: mark)...]))
        } else {
            rawPath = target
            query = []
        }
        path = PercentDecoding.decode(rawPath) ?? rawPath
    }

    /// The first value of a query parameter.
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Whether the connection should stay open after this request (RFC 9112 §9.3).
    public var wantsKeepAlive: Bool {
        if headers.containsToken("close", in: "Connection") { return false }
        if version == .http10 { return headers.containsToken("keep-alive", in: "Connection") }
        return true
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version && lhs.headers == rhs.headers && lhs.body == rhs.body
    }
}

/// An HTTP version; only 1.0 and 1.1 are spoken here.
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public static let http10 = HTTPVersion(major: 1, minor: 0)
    public static let http11 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// Percent-decoding of paths and queries (RFC 3986 §2.1).
public enum PercentDecoding {
    /// Decodes `%XX` escapes; `nil` if an escape is malformed or the result is not UTF-8.
    /// Text with no `%` is returned as it is (the same storage: a request's `path` and `rawPath` then
    /// share one allocation, which an idle subscriber keeps).
    public static func decode(_ text: String) -> String? {
        // Over the contiguous bytes (every native string's): a third of the cost of iterating the view.
        let percent = UInt8(ascii: "%")
        guard text.utf8.withContiguousStorageIfAvailable({ $0.contains(percent) }) ?? text.utf8.contains(percent) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Splits and decodes `a=1&b=2` (RFC 3986 §3.4: `+` stays a `+`; no parameter the server reads
    /// (feed names, event ids, tokens) holds a space). Malformed escapes keep the raw text.
    public static func queryItems(_ query: String) -> [(name: String, value: String)] {
        query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]) : ""
            return (decode(name) ?? name, decode(value) ?? value)
        }
    }

    package static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
