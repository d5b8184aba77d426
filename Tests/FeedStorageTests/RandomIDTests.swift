@testable import FeedStorage
import Testing

struct RandomIDTests {
    static func isLowercaseHex(_ text: String) -> Bool {
        text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    @Test(arguments: [
        (0, "0000000000000000"), (1, "0000000000000001"), (0xabc, "0000000000000abc"),
        (0x0123_4567_89ab_cdef, "0123456789abcdef"), (UInt64.max, "ffffffffffffffff"),
    ] as [(UInt64, String)])
    func hexIsSixteenLowercaseDigits(value: UInt64, text: String) {
        #expect(RandomID.hex(value) == text)
    }

    @Test func historiesAndTokensHaveTheirLengthsAndDiffer() {
        let histories = (0..<100).map { _ in RandomID.history() }
        #expect(histories.allSatisfy { $0.utf8.count == 16 && Self.isLowercaseHex($0) && $0 != "0000000000000000" })
        #expect(Set(histories).count == 100)
        let tokens = (0..<100).map { _ in RandomID.token() }
        #expect(tokens.allSatisfy { $0.utf8.count == 32 && Self.isLowercaseHex($0) })
        #expect(Set(tokens).count == 100)
    }

    /// Ids made on every write never repeat within a process, even made at once from many tasks.
    @Test func perWriteIDsAreUniqueAcrossConcurrentCallers() async {
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 { group.addTask { (0..<1_000).map { _ in RandomID.perWrite() } } }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(ids.count == 8_000 && Set(ids).count == 8_000)
        #expect(ids.allSatisfy { $0.utf8.count == 32 && Self.isLowercaseHex($0) })
        #expect(Set(ids.map { $0.prefix(16) }).count == 1, "one prefix per process")
    }
}
