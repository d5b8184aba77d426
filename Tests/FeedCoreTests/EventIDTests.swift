import FeedCore
import FeedStorage
import Testing

struct EventIDTests {
    @Test func roundTrips() {
        let id = EventID(history: "0123456789abcdef", version: 42)
        #expect(id.description == "ds1.0123456789abcdef.42")
        #expect(EventID(id.description) == id)
    }

    @Test(arguments: ["", "42", "ds1.0123456789abcdef", "ds2.0123456789abcdef.1", "ds1.0123456789ABCDEF.1", "ds1.0123456789abcde.1",
                      "ds1.0123456789abcdef.-1", "ds1.0123456789abcdef.1.2", "ds1.0123456789abcdef.1x", "ds1.0123456789abcdef.99999999999999999999",
                      // Found by fuzz-event-id: a version with leading zeros was accepted and spelled differently.
                      "ds1.0000000000000000.0000000001", "ds1.0123456789abcdef.07", "ds1.0123456789abcdef.00"])
    func foreignOrMalformedIDsAreRejected(text: String) {
        #expect(EventID(text) == nil)
    }

    @Test func aNewHistoryIsAnIDsHistory() throws {
        let history = RandomID.history()
        #expect(history != RandomID.history())
        #expect(try #require(EventID("ds1.\(history).7")).history == history)
    }
}

struct FeedIDTests {
    @Test(arguments: [("home", true), ("a", true), ("A-b_c.9", true), (String(repeating: "x", count: 64), true),
                      ("", false), (".hidden", false), ("..", false), ("a/b", false), ("a b", false), ("é", false), (String(repeating: "x", count: 65), false)])
    func validity(name: String, valid: Bool) {
        #expect(FeedID.isValid(name) == valid)
    }
}
