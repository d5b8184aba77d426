import CHiredis

/// One RESP2 reply, decoded from hiredis's `redisReply` tree into Swift values (bytes are copied out,
/// so the reply outlives `freeReplyObject`).
public enum RedisReply: Sendable, Equatable, CustomStringConvertible {
    /// `+OK`, `+PONG`: a simple string.
    case status(String)
    /// `-ERR …`: an error the server answered with (the connection stays usable).
    case error(String)
    /// `:42`.
    case integer(Int)
    /// `$n`: a bulk string, binary safe.
    case bulk([UInt8])
    /// `$-1` or `*-1`: no value.
    case null
    /// `*n`: an array of replies (EXEC, XRANGE, a script's table, a pub/sub message).
    case array([RedisReply])

    /// Copies a hiredis reply tree. The caller still frees it.
    /// - Complexity: O(n) in the reply's size.
    init(_ reply: UnsafePointer<redisReply>) {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STATUS: self = .status(Self.text(r.str, r.len))
        case REDIS_REPLY_ERROR: self = .error(Self.text(r.str, r.len))
        case REDIS_REPLY_INTEGER: self = .integer(Int(r.integer))
        case REDIS_REPLY_STRING: self = .bulk(Self.bytes(r.str, r.len))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for index in 0..<r.elements {
                if let element = r.element?[index] { elements.append(RedisReply(element)) } else { elements.append(.null) }
            }
            self = .array(elements)
        default: self = .null  // REDIS_REPLY_NIL
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ count: Int) -> [UInt8] {
        guard let pointer, count > 0 else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }

    private static func text(_ pointer: UnsafeMutablePointer<CChar>?, _ count: Int) -> String {
        String(decoding: bytes(pointer, count), as: UTF8.self)
    }

    /// The bytes of a bulk or status reply, nil otherwise.
    public var bytes: [UInt8]? {
        switch self {
        case .bulk(let bytes): bytes
        case .status(let text): Array(text.utf8)
        default: nil
        }
    }

    /// A bulk or status reply as text (UTF-8, invalid bytes replaced), nil otherwise.
    public var string: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    /// An integer reply, or a bulk one that spells an integer (scripts and `HGET` return those).
    public var integer: Int? {
        switch self {
        case .integer(let value): value
        case .bulk(let bytes): Int(String(decoding: bytes, as: UTF8.self))
        default: nil
        }
    }

    /// The elements of an array reply, nil otherwise.
    public var array: [RedisReply]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    /// Short, for logs and errors: long bulk strings are cut.
    public var description: String {
        switch self {
        case .status(let text): "+\(text)"
        case .error(let text): "-\(text)"
        case .integer(let value): ":\(value)"
        case .bulk(let bytes): bytes.count <= 64 ? "\"\(String(decoding: bytes, as: UTF8.self))\"" : "(\(bytes.count) bytes)"
        case .null: "(nil)"
        case .array(let elements): "[" + elements.map(\.description).joined(separator: ", ") + "]"
        }
    }
}
