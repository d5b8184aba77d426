import Presence
import Testing

struct PresenceItemIDsTests {
    @Test func anIDIsAKeyedDigestOfTheFeedAndTheUser() {
        let ids = PresenceItemIDs(secret: Array("one deployment's secret".utf8))
        let id = ids.id(feed: "board", userKey: "s:alice@example.com")
        #expect(id.count == 24 && id.allSatisfy(\.isHexDigit))
        #expect(id == PresenceItemIDs(secret: Array("one deployment's secret".utf8)).id(feed: "board", userKey: "s:alice@example.com"))
        #expect(id != ids.id(feed: "board2", userKey: "s:alice@example.com"))
        #expect(id != ids.id(feed: "board", userKey: "s:bob@example.com"))
        #expect(id != PresenceItemIDs(secret: Array("another secret".utf8)).id(feed: "board", userKey: "s:alice@example.com"))
    }

    @Test func theFeedAndTheUserCannotBeShiftedIntoEachOther() {
        let ids = PresenceItemIDs()
        #expect(ids.id(feed: "ab", userKey: "c") != ids.id(feed: "a", userKey: "bc"))
    }
}
