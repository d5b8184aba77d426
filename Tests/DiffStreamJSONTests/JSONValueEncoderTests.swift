import DiffStreamJSON
import Testing

struct JSONValueEncoderTests {
    struct Ack: Encodable {
        var feed: String
        var version: Int
        var ops: Int
    }

    struct Listing: Encodable {
        struct Nested: Encodable {
            var name: String
            var optional: Bool
        }

        var zeta: String
        var alpha: Double
        var missing: Int?
        var list: [Nested]
        var ints: [Int]
        var none: String?

        enum CodingKeys: String, CodingKey {
            case zeta, alpha = "a lpha", missing, list, ints, none
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(zeta, forKey: .zeta)
            try container.encode(alpha, forKey: .alpha)
            try container.encodeIfPresent(missing, forKey: .missing)
            try container.encode(list, forKey: .list)
            try container.encode(ints, forKey: .ints)
            try container.encodeNil(forKey: .none)
        }
    }

    @Test func keysComeInTheOrderTheyAreEncodedNotSorted() throws {
        let bytes = try JSONValueEncoder().encodeBytes(Ack(feed: "news", version: 2, ops: 13), terminator: "\n")
        #expect(String(decoding: bytes, as: UTF8.self) == "{\"feed\":\"news\",\"version\":2,\"ops\":13}\n")
    }

    @Test func nestedValuesOptionalsAndNumbersAreWrittenAsJSONWriterWritesThem() throws {
        let value = Listing(zeta: "\"quoted\"\n\u{1}", alpha: 0.5, missing: nil, list: [.init(name: "a", optional: true)], ints: [1, -2, 30], none: nil)
        let text = String(decoding: try JSONValueEncoder().encodeBytes(value), as: UTF8.self)
        #expect(text == #"{"zeta":"\"quoted\"\n\u0001","a lpha":0.5,"list":[{"name":"a","optional":true}],"ints":[1,-2,30],"none":null}"#)
    }

    @Test(arguments: [
        (JSONValue.null, "null"),
        (JSONValue.object(JSONObject([(key: "b", value: 1), (key: "a", value: [true, "x"])])), #"{"b":1,"a":[true,"x"]}"#),
    ])
    func aJSONValueEncodesAsItself(value: JSONValue, text: String) throws {
        #expect(String(decoding: try JSONValueEncoder().encodeBytes(value), as: UTF8.self) == text)
    }
}
