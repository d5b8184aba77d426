import Testing
import TestSupport
@testable import FeedStorage

/// The CRC-32 every stored record carries (zlib's).
struct CRC32Tests {
    @Test(arguments: [("", 0x0000_0000 as UInt32), ("a", 0xE8B7_BE43), ("123456789", 0xCBF4_3926)])
    func knownChecksums(text: String, expected: UInt32) {
        #expect(CRC32.checksum(Array(text.utf8)) == expected)
    }

    /// zlib's CRC against the definition (bit by bit, polynomial 0xEDB88320) on seeded random bytes.
    @Test(arguments: [3, 17, 2026] as [UInt64])
    func matchesTheBitwiseDefinition(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for length in [1, 2, 7, 8, 9, 63, 64, 65, 1000, 4099] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
            }
            #expect(CRC32.checksum(bytes) == crc ^ 0xFFFF_FFFF, "length \(length)")
        }
    }
}
