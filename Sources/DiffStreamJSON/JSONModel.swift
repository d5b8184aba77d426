#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A model exactly as a client sent it, kept as canonical JSON text plus a 64-bit fingerprint.
///
/// The canonical form (written down in `docs/protocol.md`) has no whitespace, object keys sorted by
/// their bytes, the shortest string escapes, and every number spelled from its exact decimal value. So
/// two models are equal exactly when they are equal JSON values: key order does not matter, `1`, `1.0`
/// and `1.00` are equal, `9007199254740993` and `9007199254740992` are not, and numbers of any size or
/// precision (`1e400`, 30-digit integers) are kept and written back with their exact value.
///
/// Comparing two models compares fingerprints first, then bytes; writing one into a snapshot or a batch
/// copies its bytes. Models read from one document share that document's buffer.
public struct JSONModel: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The canonical JSON text, UTF-8.
    public let bytes: ArraySlice<UInt8>
    /// A hash of ``bytes`` (equal models have equal fingerprints).
    public let fingerprint: UInt64

    static let nullBytes: [UInt8] = Array("null".utf8)
    static let nullFingerprint: UInt64 = nullBytes.withUnsafeBytes { fingerprint(of: $0) }

    /// `null`.
    public init() {
        bytes = Self.nullBytes[...]
        fingerprint = Self.nullFingerprint
    }

    /// Bytes known to be canonical, with their fingerprint.
    init(canonical bytes: ArraySlice<UInt8>, fingerprint: UInt64) {
        self.bytes = bytes
        self.fingerprint = fingerprint
    }

    /// Parses JSON text (strictly, as ``JSONParser`` does) into its canonical form.
    /// - Complexity: O(n log n) in the text's length (objects' keys are sorted), O(n) when every object
    ///   already lists its keys in order.
    public init(parsing text: some Collection<UInt8>) throws(JSONParseError) {
        let canonical: [UInt8]
        if let result = try Self.withContiguous(text, { (buffer) throws(JSONParseError) -> [UInt8] in
            try CanonicalJSONScanner.canonicalize(buffer)
        }) {
            canonical = result
        } else {
            canonical = try Array(text).withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> [UInt8] in
                try CanonicalJSONScanner.canonicalize(buffer)
            }
        }
        bytes = canonical[...]
        fingerprint = canonical.withUnsafeBytes { Self.fingerprint(of: $0) }
    }

    /// Parses JSON text given as a string.
    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8))
    }

    /// The canonical form of a value. Numbers of a ``JSONValue`` are `Double`s: each is taken at the
    /// decimal value of its shortest round-trip spelling (`0.1` is `0.1`).
    public init(_ value: JSONValue) {
        if case .null = value { self.init(); return }
        var writer = JSONWriter(capacity: 64)
        writer.write(value)
        // The writer's output is always valid JSON; the fallback only keeps this total.
        self = (try? JSONModel(parsing: writer.bytes)) ?? JSONModel()
    }

    /// Whether the model is `null`.
    public var isNull: Bool { bytes.elementsEqual(Self.nullBytes) }

    /// The model as a ``JSONValue`` tree. Lossy for numbers: each becomes the nearest `Double`
    /// (infinite beyond its range, which ``JSONWriter`` writes as `null`).
    public var value: JSONValue {
        (try? JSONParser.parse(bytes, numbersBeyondDouble: .infinity)) ?? .null
    }

    /// The value of a key, if the model is an object that has it (lossy for numbers, see ``value``).
    public subscript(key: String) -> JSONValue? { value[key] }

    /// The canonical JSON text.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    /// Fingerprints first, then bytes. - Complexity: O(n) in the models' length.
    @inlinable public static func == (lhs: JSONModel, rhs: JSONModel) -> Bool {
        guard lhs.fingerprint == rhs.fingerprint, lhs.bytes.count == rhs.bytes.count else { return false }
        return lhs.bytes.withUnsafeBufferPointer { left in
            rhs.bytes.withUnsafeBufferPointer { right in
                left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
    }

    @inlinable public func hash(into hasher: inout Hasher) { hasher.combine(fingerprint) }

    /// Decodes any JSON value through ``JSONValue`` (so `Codable` users get `Double` precision).
    public init(from decoder: any Decoder) throws {
        self.init(try JSONValue(from: decoder))
    }

    /// Encodes the model as a ``JSONValue`` (lossy for numbers beyond `Double`).
    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }

    /// A fast 64-bit hash of bytes (eight at a time; not cryptographic).
    static func fingerprint(of buffer: UnsafeRawBufferPointer) -> UInt64 {
        let count = buffer.count
        var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: count)
        var index = 0
        while index + 8 <= count {
            let word = buffer.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            hash = (hash ^ word) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 32
            index += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < count {
            tail |= UInt64(buffer[index]) << shift
            shift += 8
            index += 1
        }
        hash = (hash ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        return hash ^ (hash >> 29)
    }

    static func withContiguous<R>(_ bytes: some Collection<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> R) throws(JSONParseError) -> R? {
        var failure: JSONParseError?
        let result: R?? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(JSONParseError) { return try body(buffer) } catch { failure = error; return nil }
        }
        if let failure { throw failure }
        return result ?? nil
    }
}
