import Testing
import FeedCore

struct FeedWriteResultTests {
    /// A kept answer replays for its own request and for records kept without a digest; another
    /// request's digest is refused.
    @Test(arguments: [
        ("1 4 12 aa", "aa", FeedWriteResult(created: true, version: 4, operations: 12, replayed: true) as FeedWriteResult?),
        ("1 4 12", "aa", FeedWriteResult(created: true, version: 4, operations: 12, replayed: true)),
        ("0 4 0 aa", "bb", nil),
    ])
    func replaying(kept: String, request: String, expected: FeedWriteResult?) {
        let result = try? FeedWriteResult(replaying: Array(kept.utf8), version: 9, request: request)
        #expect(result == expected)
        if expected == nil {
            #expect(throws: FeedWriteError.idempotencyKeyReused) { try FeedWriteResult(replaying: Array(kept.utf8), version: 9, request: request) }
        }
    }

    @Test func answerEndsWithTheRequestDigest() {
        let result = FeedWriteResult(created: false, version: 3, operations: 2)
        #expect(result.answer(request: "ab") == Array("0 3 2 ab".utf8))
        #expect(result.answer(request: nil) == Array("0 3 2".utf8))
    }
}
