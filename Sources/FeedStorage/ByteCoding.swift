/// Little-endian fixed-width integers and length-prefixed byte strings, for the log's records.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func int(_ value: Int) { u64(UInt64(bitPattern: Int64(value))) }
    /// A 32-bit length, then the bytes.
    mutating func data(_ value: [UInt8]) {
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }
    /// Overwrites 4 bytes at `offset` (a length or CRC known only once what follows is written).
    mutating func patch32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for index in 0..<4 { bytes[offset + index] = raw[index] }
        }
    }
}

/// Reads what ``ByteWriter`` wrote from a slice of a file; every read checks the bounds.
struct ByteReader {
    struct Truncated: Error {}

    let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int

    init(_ bytes: [UInt8], from offset: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.offset = offset
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var remaining: Int { end - offset }

    mutating func u8() throws(Truncated) -> UInt8 {
        guard offset < end else { throw Truncated() }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() throws(Truncated) -> UInt16 { UInt16(truncatingIfNeeded: try fixed(2)) }
    mutating func u32() throws(Truncated) -> UInt32 { UInt32(truncatingIfNeeded: try fixed(4)) }
    mutating func u64() throws(Truncated) -> UInt64 { try fixed(8) }
    mutating func int() throws(Truncated) -> Int { Int(Int64(bitPattern: try u64())) }
    mutating func data() throws(Truncated) -> [UInt8] { try take(Int(try u32())) }

    mutating func take(_ count: Int) throws(Truncated) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw Truncated() }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    private mutating func fixed(_ width: Int) throws(Truncated) -> UInt64 {
        guard remaining >= width else { throw Truncated() }
        var value: UInt64 = 0
        for index in (0..<width).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
        offset += width
        return value
    }
}
