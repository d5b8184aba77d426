import Redis
import RedisFeedStore
import Testing

struct RedisKeysTests {
    @Test(arguments: ["diffstream", "myapp:diffstream", "a", "team-1.prod_ds", String(repeating: "p", count: 128)])
    func prefixesThatNameKeys(prefix: String) {
        #expect(RedisKeys.problem(withPrefix: prefix) == nil)
        #expect(RedisKeys(prefix: prefix).feed("news") == "\(prefix):v\(RedisKeys.schemaVersion):feed:news")
    }

    /// A family's shard's lease token names its lease (the commit script checks that one); a feed's own
    /// lease token does not (the feed's lease is checked).
    @Test(arguments: [
        ("0123456789abcdef0123456789abcdef", nil), ("0123456789abcdef0123456789abcdef@family:home:7", "family:home:7"),
        ("x@family:a.b:0", "family:a.b:0"), ("", nil),
    ] as [(String, String?)])
    func aTokenNamesItsLeaseUnlessItIsAFeeds(token: String, lease: String?) {
        #expect(RedisLease.leaseName(ofToken: token) == lease)
    }

    /// The scripts' keys, written into a command, are the keys the `String` forms name, in the scripts' order.
    @Test(arguments: [("diffstream", "news", "w1", "n1", "news", true), ("myapp:diffstream", "home.ann", "key:with:colons", "n2", "family:home:7", false),
                      ("p", "a", "", "", "a", true)])
    func scriptKeysAreTheNamedKeys(prefix: String, feed: String, writeID: String, nonce: String, lease: String, keyed: Bool) {
        let keys = RedisKeys(prefix: prefix)
        let named = [keys.feed(feed), keys.batches(feed), keys.write(feed, id: writeID), keys.epoch, keys.lease(lease), keys.attempt(feed, nonce: nonce), keys.usage,
                     keys.writes(feed), keys.writeOrder(feed, keyed: keyed), keys.writeOrder(feed, keyed: !keyed)]
        #expect(keys.writeOrder(feed, keyed: true) == "\(keys.base)keyed:\(feed)" && keys.writeOrder(feed, keyed: false) == "\(keys.base)drawn:\(feed)")
        var command = RedisCommand("EVALSHA")
        keys.appendScriptKeys(feed: feed, writeID: writeID, keyed: keyed, attempt: nonce, lease: lease, to: &command)
        #expect(Array(command.resp) == Array(RedisCommand([Array("EVALSHA".utf8)] + named.map { Array($0.utf8) }).resp))
    }

    @Test func interestSetsHaveKeysOfTheirOwn() {
        #expect(RedisKeys(prefix: "p").interest("home:7") == "p:v\(RedisKeys.schemaVersion):interest:home:7")
    }

    @Test(arguments: ["", "my app", "tab\there", "é", "feeds*", "a?b", "[x]", "back\\slash", String(repeating: "p", count: 129)])
    func prefixesThatCannot(prefix: String) {
        #expect(RedisKeys.problem(withPrefix: prefix) != nil)
    }
}
