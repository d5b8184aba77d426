import FeedCore
import HTTPAPI
import Testing

/// The live reads' cursor: 20-s intervals since 1970, moved past the reader's own.
struct PollCursorTests {
    @Test func theIntervalOfNow() {
        #expect(PollCursor.current(now: 0) == 0)
        #expect(PollCursor.current(now: 19.9) == 0)
        #expect(PollCursor.current(now: 20) == 1)
        #expect(PollCursor.current(now: 1_800_000_000) == 90_000_000)
    }

    @Test(arguments: [(nil, 0, 90_000_000), (89_999_999, 2, 90_000_000), (90_000_000, 0, 90_000_001), (90_000_000, 2, 90_000_003), (90_000_005, 1, 90_000_007)] as [(Int?, Int, Int)])
    func theAnswersCursor(_ requested: Int?, _ jitter: Int, _ expected: Int) {
        #expect(PollCursor.next(after: requested, now: 1_800_000_010, jitter: jitter) == expected)
    }

    /// However stale a cached answer, the cursor it hands a reader is never the one the reader sent.
    @Test func neverTheReadersOwnCursor() {
        for requested in [0, 89_999_999, 90_000_000, 90_000_001, 100_000_000] {
            for jitter in PollCursor.jitter {
                #expect(PollCursor.next(after: requested, now: 1_800_000_010, jitter: jitter) != requested)
            }
        }
    }

    /// The jitter is the same for one position and cursor (in every process: FNV-1a, not `Hasher`),
    /// within its range, and varies between positions.
    @Test func theJitterIsAFunctionOfThePositionAndTheCursor() {
        let position = EventID(history: "0123456789abcdef", version: 7)
        #expect(PollCursor.jitter(at: position, after: 90_000_000) == PollCursor.jitter(at: position, after: 90_000_000))
        let jitters = (0..<60).map { PollCursor.jitter(at: EventID(history: "0123456789abcdef", version: $0), after: 90_000_000) }
        #expect(jitters.allSatisfy(PollCursor.jitter.contains))
        #expect(Set(jitters) == Set(PollCursor.jitter))
        #expect(PollCursor.jitter(at: position, after: 90_000_000) == 0, "FNV-1a of 'ds1.0123456789abcdef.7 90000000' mod 3")
    }
}
