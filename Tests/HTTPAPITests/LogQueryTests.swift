import FeedCore
import HTTPAPI
import HTTPCore
import Testing

/// The log route's one spelling of each query: anything else is refused.
struct LogQueryTests {
    static let id = "ds1.0123456789abcdef.7"
    static let position = EventID(history: "0123456789abcdef", version: 7)

    static func items(_ query: String) -> [(name: String, value: String)] {
        query.isEmpty ? [] : PercentDecoding.queryItems(query)
    }

    @Test func theFourForms() throws {
        #expect(try LogQuery.parse(Self.items("")) == .start)
        #expect(try LogQuery.parse(Self.items("after=\(Self.id)")) == .after(Self.position))
        #expect(try LogQuery.parse(Self.items("after=\(Self.id)&live=1")) == .live(Self.position, cursor: nil))
        #expect(try LogQuery.parse(Self.items("after=\(Self.id)&live=1&cursor=123")) == .live(Self.position, cursor: 123))
        #expect(try LogQuery.parse(Self.items("after=ds1.0123456789abcdef%2E7")) == .after(Self.position), "percent-decoded")
    }

    @Test(arguments: [
        "live=1", "cursor=1", "after=ds1.0123456789abcdef.7&cursor=1", "live=1&after=ds1.0123456789abcdef.7", "after=ds1.0123456789abcdef.7&after=ds1.0123456789abcdef.7", "after=ds1.0123456789abcdef.7&live=true",
        "after=ds1.0123456789abcdef.7&live=", "after=ds1.0123456789abcdef.7&live=1&cursor=x", "after=ds1.0123456789abcdef.7&live=1&cursor=", "after=ds1.0123456789abcdef.7&live=1&cursor=1&x=1",
        "x=1", "after=nope", "after=", "after=ds1.0123456789abcdef.7&live=1&cursor=1&cursor=2", "access_token=t",
    ])
    func otherQueriesAreRefused(_ query: String) {
        #expect(throws: LogQueryError.self) { try LogQuery.parse(Self.items(query)) }
    }
}
