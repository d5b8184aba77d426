import CZlib

/// CRC-32 (IEEE 802.3, the polynomial of zlib and PNG), to notice bytes that changed on disk.
///
/// zlib's `crc32` (several bytes per step) rather than a byte-at-a-time table loop: it runs on the
/// store's commit thread for every snapshot and batch written, where a bytewise loop was 7% of that
/// thread's time under 16 writers.
/// - Complexity: O(n).
public enum CRC32 {
    /// The checksum of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { checksum($0) }
    }

    /// The checksum of part of an array, without copying it.
    public static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.withUnsafeBufferPointer { checksum($0) }
    }

    static func checksum(_ buffer: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var crc: uLong = 0
        var start = buffer.baseAddress
        var left = buffer.count
        while left > 0 {  // zlib takes a 32-bit length
            let chunk = min(left, Int(Int32.max))
            crc = CZlib.crc32(crc, start, uInt(chunk))
            start = start.map { $0 + chunk }
            left -= chunk
        }
        return UInt32(crc)
    }
}
