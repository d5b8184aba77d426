import DiffStreamJSON
import FeedCore
import HTTPAPI
import Testing

/// The body of a log read's answer.
struct LogAnswerTests {
    @Test func theStartCarriesTheSnapshot() throws {
        let id = EventID(history: "0123456789abcdef", version: 3)
        let answer = LogAnswer(feed: "f", history: id.history, snapshot: Array("{\"v\":3}".utf8), batches: [], next: id, upToDate: true, cursor: 42)
        #expect(String(decoding: answer.json, as: UTF8.self)
                == #"{"feed":"f","history":"0123456789abcdef","snapshot":{"v":3},"batches":[],"next":"ds1.0123456789abcdef.3","upToDate":true,"cursor":"42"}"# + "\n")
    }

    @Test func batchesInOrder() throws {
        let id = EventID(history: "0123456789abcdef", version: 5)
        let answer = LogAnswer(feed: "f", history: id.history, batches: [Array("{\"v\":4}".utf8), Array("{\"v\":5}".utf8)], next: id, upToDate: false, cursor: 1)
        let json = try JSONParser.parse(answer.json)
        #expect(json["batches"] == [["v": 4], ["v": 5]])
        #expect(json["snapshot"] == nil)
        #expect(json["upToDate"] == .bool(false))
        #expect(json["next"] == .string("ds1.0123456789abcdef.5"))
    }
}
