import FeedStorage
import FeedReplication
import Testing

struct SharedFeedsTests {
    static let h1 = FeedPosition(history: "h1", version: 3)

    /// When a read refreshes a copy from the shared store: only when the copy misses something.
    @Test(arguments: [
        (h1, h1, false),
        (h1, FeedPosition(history: "h1", version: 4), true),
        (h1, FeedPosition(history: "h1", version: 2), false),  // ahead: a commit heard after the answer
        (h1, FeedPosition(history: "h2", version: 1), true),
        (h1, nil, true),  // deleted elsewhere
        (nil, h1, true),  // created elsewhere
        (nil, nil, false),
    ] as [(FeedPosition?, FeedPosition?, Bool)])
    func aCopyIsBehindWhenTheStoreHoldsMore(held: FeedPosition?, stored: FeedPosition?, behind: Bool) {
        #expect(SharedFeeds.isBehind(held, stored) == behind)
    }
}
