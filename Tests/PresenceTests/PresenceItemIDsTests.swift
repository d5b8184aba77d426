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

    /// The keyed HMAC is made once and copied for each id: the ids are still HMAC-SHA256 of the feed, a
    /// 0 and the user key (this value is Python's `hmac.new(secret, b"board\0s:alice@example.com",
    /// sha256)`, first 12 bytes), and making one leaves the next unchanged.
    @Test func anIDIsTheHMACOfTheFeedAndTheUserKeyEveryTime() {
        let ids = PresenceItemIDs(secret: Array("one deployment's secret".utf8))
        for _ in 0..<3 { #expect(ids.id(feed: "board", userKey: "s:alice@example.com") == "d754aee8ab98406c936360a2") }
    }

    @Test func theFeedAndTheUserCannotBeShiftedIntoEachOther() {
        let ids = PresenceItemIDs()
        #expect(ids.id(feed: "ab", userKey: "c") != ids.id(feed: "a", userKey: "bc"))
    }
}
