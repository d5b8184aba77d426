import FeedCore
import Testing

/// The fields of this server's own events, as the log route slices their data out.
struct EventFieldsTests {
    @Test func parsesEventsInOrder() {
        let bytes = Array("retry: 2000\n: heartbeat 15\n\nevent: batch\nid: ds1.0123456789abcdef.2\ndata: {\"a\":1}\n\nevent: deleted\ndata: {}\n\n".utf8)
        #expect(EventFields.parse(bytes) == [
            EventFields(type: "batch", id: "ds1.0123456789abcdef.2", data: Array("{\"a\":1}".utf8)),
            EventFields(type: "deleted", id: nil, data: Array("{}".utf8)),
        ])
    }

    @Test func joinsDataLinesWithALineFeed() {
        let bytes = Array("event: x\ndata: a\ndata: b\n\n".utf8)
        #expect(EventFields.parse(bytes) == [EventFields(type: "x", id: nil, data: Array("a\nb".utf8))])
    }

    @Test func takesALastEventWithoutItsBlankLine() {
        #expect(EventFields.parse(Array("data: z\n".utf8)) == [EventFields(type: "message", id: nil, data: Array("z".utf8))])
        #expect(EventFields.parse([]) == [])
    }
}
