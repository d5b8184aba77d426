#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A section or item id on the wire, and the rules ids follow.
///
/// Ids compare and hash by their exact UTF-8 bytes, that is by Unicode code points. Swift's `String ==`
/// treats canonically equivalent strings as equal (`"\u{E9}"` and `"e\u{301}"`), which would make two
/// distinct JSON strings collide as ids; a `WireID` never does.
public struct WireID: Hashable, Sendable, Comparable, ExpressibleByStringLiteral, CustomStringConvertible, Codable {
    /// The longest id, in UTF-8 bytes.
    public static let maximumLength = 256

    /// The id as text.
    public let string: String

    /// Wraps a string (no validation: see ``isValid(_:)``).
    @inlinable public init(_ string: String) { self.string = string }

    public init(stringLiteral value: String) { self.string = value }

    /// Whether a string is a valid section or item id: not empty, at most 256 UTF-8 bytes.
    public static func isValid(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumLength
    }

    public var description: String { string }

    /// Byte equality. - Complexity: O(n) in the shorter id's UTF-8 length.
    @inlinable public static func == (lhs: WireID, rhs: WireID) -> Bool {
        ExactString.equal(lhs.string, rhs.string)
    }

    /// Hashes the UTF-8 bytes.
    @inlinable public func hash(into hasher: inout Hasher) {
        ExactString.hash(string, into: &hasher)
    }

    /// Byte order, which is code point order.
    public static func < (lhs: WireID, rhs: WireID) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }

    public init(from decoder: any Decoder) throws {
        string = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(string)
    }
}

/// Comparing and hashing strings by their UTF-8 bytes (code points), not by canonical equivalence.
public enum ExactString {
    /// Whether two strings have the same UTF-8 bytes.
    @inlinable public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        // The same two words: the same small string, or one storage shared (an item taken over from
        // the previous document). Only a shortcut: any other pair is compared byte by byte.
        if unsafeBitCast(lhs, to: (UInt64, UInt64).self) == unsafeBitCast(rhs, to: (UInt64, UInt64).self) { return true }
        let count = lhs.utf8.count
        guard count == rhs.utf8.count else { return false }
        let result = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in
                count == 0 || memcmp(left.baseAddress!, right.baseAddress!, count) == 0
            }
        }
        if let result, let result { return result }
        return lhs.utf8.elementsEqual(rhs.utf8)
    }

    /// Feeds the UTF-8 bytes to a hasher.
    @inlinable public static func hash(_ string: String, into hasher: inout Hasher) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil { for byte in string.utf8 { hasher.combine(byte) } }
        hasher.combine(0xFF as UInt8)  // no UTF-8 byte is 0xFF: ends the string unambiguously
    }

    /// Code point order (UTF-8 byte order).
    @inlinable public static func less(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}
