import RedisFeedStore
import Testing

struct RedisKeysTests {
    @Test(arguments: ["diffstream", "myapp:diffstream", "a", "team-1.prod_ds", String(repeating: "p", count: 128)])
    func prefixesThatNameKeys(prefix: String) {
        #expect(RedisKeys.problem(withPrefix: prefix) == nil)
        #expect(RedisKeys(prefix: prefix).feed("news") == "\(prefix):v\(RedisKeys.schemaVersion):feed:news")
    }

    @Test(arguments: ["", "my app", "tab\there", "é", "feeds*", "a?b", "[x]", "back\\slash", String(repeating: "p", count: 129)])
    func prefixesThatCannot(prefix: String) {
        #expect(RedisKeys.problem(withPrefix: prefix) != nil)
    }
}
