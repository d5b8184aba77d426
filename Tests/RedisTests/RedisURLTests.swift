import Testing
@testable import Redis

struct RedisURLTests {
    static let valid: [(String, RedisURL)] = [
        ("redis://localhost", RedisURL(host: "localhost")),
        ("redis://127.0.0.1:6380", RedisURL(host: "127.0.0.1", port: 6380)),
        ("redis://redis:6379/2", RedisURL(host: "redis", port: 6379, database: 2)),
        ("redis://cache.example.com/15", RedisURL(host: "cache.example.com", database: 15)),
        ("REDIS://h:1/", RedisURL(host: "h", port: 1)),
        ("redis://:s3cret@h:6379/0", RedisURL(host: "h", password: "s3cret")),
        ("redis://app:s3cret@h:6379/1", RedisURL(host: "h", database: 1, user: "app", password: "s3cret")),
        ("redis://app:p%40ss%3Aw0rd@h", RedisURL(host: "h", user: "app", password: "p@ss:w0rd")),
        ("redis://app:a@b@h", RedisURL(host: "h", user: "app", password: "a@b")),
        ("redis://[::1]:7000/3", RedisURL(host: "::1", port: 7000, database: 3)),
        ("redis://[fe80::1]", RedisURL(host: "fe80::1")),
    ]

    @Test(arguments: valid)
    func parses(text: String, expected: RedisURL) throws {
        #expect(try RedisURL(parsing: text) == expected)
    }

    static let invalid: [(String, RedisURLError)] = [
        ("localhost:6379", .notAURL(text: "localhost:6379")),
        ("rediss://h:6379", .unsupportedScheme("rediss")),
        ("redis+sentinel://h", .unsupportedScheme("redis+sentinel")),
        ("http://h", .unsupportedScheme("http")),
        ("redis://h:6379?timeout=1", .unsupportedPart("a query")),
        ("redis://h#x", .unsupportedPart("a fragment")),
        ("redis://user@h", .userWithoutPassword),
        ("redis://u:%zz@h", .badPercentEncoding(part: "password")),
        ("redis://u%4:p@h", .badPercentEncoding(part: "user")),
        ("redis://", .missingHost),
        ("redis://:6379", .missingHost),
        ("redis://u:p@/0", .missingHost),
        ("redis://h:0", .badPort("0")),
        ("redis://h:65536", .badPort("65536")),
        ("redis://h:", .badPort("")),
        ("redis://h:63a", .badPort("63a")),
        ("redis://h:-1", .badPort("-1")),
        ("redis://h:6379/x", .badDatabase("x")),
        ("redis://h:6379/1/2", .badDatabase("1/2")),
        ("redis://h:6379/-1", .badDatabase("-1")),
        ("redis://ho st", .badHost("ho st")),
        ("redis://[::1", .badHost("[::1")),
        ("redis://[::1]x", .badHost("[::1]x")),
        ("redis://[host]", .badHost("[host]")),
    ]

    @Test(arguments: invalid)
    func refuses(text: String, expected: RedisURLError) {
        #expect(throws: expected) { try RedisURL(parsing: text) }
    }

    @Test(arguments: invalid)
    func everyRefusalSaysWhatIsWrongWithoutThePassword(text: String, expected: RedisURLError) {
        #expect(!expected.description.isEmpty)
        #expect(!expected.description.contains("s3cret"))
    }

    @Test func aURLsTextHidesItsPassword() throws {
        let url = try RedisURL(parsing: "redis://app:s3cret@h:6380/2")
        #expect(url.description == "redis://app:***@h:6380/2")
        #expect(!String(describing: RedisURLError.notAURL(text: RedisURL.redacted("x://u:s3cret@h"))).contains("s3cret"))
        #expect(RedisURL(host: "::1").endpoint == "[::1]:6379")
    }
}
