import FeedCore
import Presence
import Testing

struct PresenceFeedNameTests {
    @Test(arguments: ["board", "home.alice", String(repeating: "a", count: 54)])
    func aFeedOfAtMost54CharactersIsNamedByThePrefix(feed: String) {
        let name = PresenceFeedName.of(feed)
        #expect(name == "_presence." + feed)
        #expect(FeedID.isValid(name))
        #expect(PresenceFeedName.plainTarget(of: name) == feed)
        #expect(PresenceFeedName.isReserved(name))
    }

    @Test func aLongerFeedIsNamedByAHashAndFoundOnceHandedOut() async {
        let feed = String(repeating: "b", count: 64)
        let name = PresenceFeedName.of(feed)
        #expect(name.hasPrefix(PresenceFeedName.hashedPrefix) && name.count == 42)
        #expect(FeedID.isValid(name))
        #expect(PresenceFeedName.plainTarget(of: name) == nil)
        let feeds = PresenceFeeds(transport: nil)
        #expect(feeds.target(of: name) == nil)
        #expect(feeds.name(of: feed) == name)
        #expect(feeds.target(of: name) == feed)
    }

    @Test(arguments: ["board", "_presenceboard", "presence.board", "_presence"])
    func otherNamesAreNotReserved(name: String) {
        #expect(!PresenceFeedName.isReserved(name))
    }
}
