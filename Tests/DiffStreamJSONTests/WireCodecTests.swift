import DiffStream
import DiffStreamJSON
import TestSupport
import Testing

struct WireCodecTests {
    func decode(_ text: String) throws(WireError) -> WireSnapshot { try WireCodec.decodeSnapshot(Array(text.utf8)) }

    @Test func modelsAreKeptExactly() throws {
        let snapshot = try decode(#"{"sections":[{"id":"s","model":{"big":12345678901234567890},"items":[{"id":"a","kind":"k","model":{"n":9007199254740993,"x":1e400,"f":0.1000}}]}]}"#)
        #expect(snapshot.sections[0].model.description == #"{"big":12345678901234567890}"#)
        #expect(snapshot.item(withID: "a")?.model.description == #"{"f":0.1,"n":9007199254740993,"x":1e+400}"#)
        let encoded = String(decoding: WireCodec.encode(snapshot), as: UTF8.self)
        #expect(encoded == #"{"sections":[{"id":"s","model":{"big":12345678901234567890},"items":[{"id":"a","kind":"k","model":{"f":0.1,"n":9007199254740993,"x":1e+400}}]}]}"#)
        #expect(try WireCodec.decodeSnapshot(WireCodec.encode(snapshot)) == snapshot)
    }

    @Test func aOneUnitChangeBeyondDoublePrecisionIsAnUpdate() throws {
        let old = try decode(#"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"n":9007199254740992}}]}]}"#)
        let new = try decode(#"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"n":9007199254740993}}]}]}"#)
        let batch = WireSnapshot.diff(from: old, to: new)
        #expect(batch.counts == OperationCounts([.update: 1]))
        var writer = JSONWriter()
        WireCodec.writeOperations(batch.operations, into: &writer)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"[{"op":"update","item":"a","kind":"k","model":{"n":9007199254740993}}]"#)
    }

    @Test func keyOrderAndSpellingDoNotMakeAChange() throws {
        let old = try decode(#"{"sections":[{"id":"s","model":{"a":1,"b":[1.0]},"items":[{"id":"a","kind":"k","model":{"x":"\u00e9","y":100}}]}]}"#)
        let new = try decode(#"{ "sections" : [ { "items" : [ { "model" : { "y" : 1e2 , "x" : "é" } , "kind" : "k" , "id" : "a" } ] , "model" : { "b" : [ 1 ] , "a" : 1.00 } , "id" : "s" } ] }"#)
        #expect(WireSnapshot.diff(from: old, to: new).isEmpty)
        #expect(old == new)
    }

    @Test func idsAreExactCodePoints() throws {
        let snapshot = try decode("{\"sections\":[{\"id\":\"a\",\"items\":[{\"id\":\"\u{E9}\",\"kind\":\"k\"},{\"id\":\"e\u{301}\",\"kind\":\"k\"}]}]}")
        #expect(snapshot.numberOfItems == 2)
        let composed = try decode("{\"sections\":[{\"id\":\"a\",\"model\":{\"t\":\"\u{E9}\"}}]}")
        let decomposed = try decode("{\"sections\":[{\"id\":\"a\",\"model\":{\"t\":\"e\u{301}\"}}]}")
        #expect(WireSnapshot.diff(from: composed, to: decomposed).counts == OperationCounts([.updateSection: 1]))
        let kinds = (try decode(#"{"sections":[{"id":"a","items":[{"id":"x","kind":"\u00e9"}]}]}"#), try decode("{\"sections\":[{\"id\":\"a\",\"items\":[{\"id\":\"x\",\"kind\":\"e\u{301}\"}]}]}"))
        #expect(WireSnapshot.diff(from: kinds.0, to: kinds.1).counts == OperationCounts([.update: 1]))
    }

    @Test func escapedKeysAreTheSameKeys() throws {
        let snapshot = try decode(#"{"\u0073ections":[{"\u0069d":"a","items":[{"id":"x","k\u0069nd":"card","mod\u0065l":1}]}]}"#)
        #expect(snapshot.item(withID: "x")?.kind == "card" && snapshot.item(withID: "x")?.model.description == "1")
        #expect(throws: WireError.self) { try decode(#"{"sections":[{"id":"a","\u0069d":"b"}]}"#) }
    }

    @Test func kindsAreReadExactlyEvenWhenRepeated() throws {
        let snapshot = try decode(#"{"sections":[{"id":"s","items":[{"id":"1","kind":"card"},{"id":"2","kind":"card"},{"id":"3","kind":"c\u0061rd"},{"id":"4","kind":"cards"},{"id":"5","kind":"car"},{"id":"6","kind":"card"},{"id":"7","kind":"é"},{"id":"8","kind":"é"}]}]}"#)
        #expect(snapshot.items.map(\.kind) == ["card", "card", "card", "cards", "car", "card", "é", "é"])
    }

    @Test func optionalPartsAndUnknownMembers() throws {
        let snapshot = try decode(#"{"version":3,"sections":[{"id":"a","items":null,"note":{"x":[1,2]}},{"id":"b","items":[{"id":"x","kind":"k","extra":true}]}]}"#)
        #expect(snapshot.sectionIDs == ["a", "b"])
        #expect(snapshot.sections[0].model.isNull && snapshot.item(withID: "x")?.model.isNull == true)
    }

    /// Malformed JSON is reported before a shape problem, wherever it is; a shape problem names its path.
    @Test(arguments: [
        (#"{"sections":[{"id":1}],"x":01}"#, "malformed", "leading zeros"),
        (#"{"sections":[{"id":1}]} x"#, "malformed", "after"),
        (#"{"sections":[{"id":1}],"sections":[]}"#, "malformed", "duplicate"),
        (#"{"sections":[{"id":"a","model":{"k":1,"k":2}}]}"#, "malformed", "duplicate"),
        (#"[]"#, "shape", "$"), (#"{}"#, "shape", "sections"), (#"{"sections":{}}"#, "shape", "sections"),
        (#"{"sections":[1]}"#, "shape", "sections[0]"), (#"{"sections":[{"id":1}]}"#, "shape", "sections[0].id"),
        (#"{"sections":[{"items":[],"id":"a"},{"id":"b","items":[{"id":"x"}]}]}"#, "shape", "sections[1].items[0].kind"),
        (#"{"sections":[{"id":"a","items":[{"id":"x","kind":""}]}]}"#, "shape", "sections[0].items[0].kind"),
        (#"{"sections":[{"id":"a","items":[{"kind":"k","id":""}]}]}"#, "invalidID", "sections[0].items[0].id"),
        (#"{"sections":[{"id":"a","items":{}}]}"#, "shape", "sections[0].items"),
        (#"{"sections":[{"id":"a"},{"id":"a"}]}"#, "snapshot", "duplicate section id 'a'"),
        (#"{"sections":[{"id":"a","items":[{"id":"x","kind":"k"}]},{"id":"b","items":[{"id":"x","kind":"k"}]}]}"#, "snapshot", "duplicate item id 'x'"),
    ] as [(String, String, String)])
    func errors(text: String, kind: String, detail: String) {
        do {
            _ = try decode(text)
            Issue.record("accepted \(text)")
        } catch {
            let actual: String = switch error {
            case .malformed: "malformed"
            case .shape: "shape"
            case .invalidID: "invalidID"
            case .snapshot: "snapshot"
            }
            #expect(actual == kind, "\(error)")
            #expect(error.description.contains(detail), "\(error)")
        }
    }

    @Test func malformedErrorsCarryTheOffset() {
        #expect(throws: WireError.malformed(JSONParseError(offset: 24, reason: "control character in string"))) {
            try decode("{\"sections\":[{\"id\":\"a\u{1}\"}]}".replacingOccurrences(of: "\"a", with: "\"abcd"))
        }
    }

    @Test func theTreePathAndTheBytePathAgree() throws {
        let text = #"{"sections":[{"id":"s","model":{"b":2,"a":[1.5,"x"]},"items":[{"id":"i","kind":"k","model":null},{"id":"j","kind":"k","model":{"q":true}}]}]}"#
        let viaTree = try WireCodec.decodeSnapshot(try JSONParser.parse(text))
        #expect(viaTree == (try decode(text)))
    }

    /// `encodedCount` (what a feed in memory keeps of its snapshot's encoding: the size) is the length
    /// of `encode`'s bytes, for ids and kinds that need escapes, non-ASCII and every kind of model;
    /// seeded snapshots.
    @Test(arguments: 0..<20)
    func theEncodedCountIsTheEncodingsLength(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let texts = ["a", "", "quo\"te", "back\\slash", "tab\tnew\nline\r", "\u{1}\u{1f}", "é✓😀", "del\u{7f}", "x y z"]
        func text() -> String { (0..<Int.random(in: 1...3, using: &rng)).map { _ in texts.randomElement(using: &rng)! }.joined() }
        func model() -> JSONValue {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: .null
            case 1: .string(text())
            case 2: .number(Double(Int.random(in: -1000...1000, using: &rng)) / 8)
            default: .object(JSONObject([(key: text(), value: .bool(true)), (key: "n", value: .array([.null, .string(text())]))]))
            }
        }
        var sections: [Section<WireSection, WireItem>] = []
        var next = 0
        for index in 0..<Int.random(in: 0...4, using: &rng) {
            let items = (0..<Int.random(in: 0...6, using: &rng)).map { _ -> WireItem in
                next += 1
                return WireItem(id: "i\(next)" + (Bool.random(using: &rng) ? "-é" : ""), kind: text(), model: model())
            }
            sections.append(Section(WireSection(id: "s\(index)", model: model()), items: items))
        }
        let snapshot = try WireSnapshot(sections: sections)
        #expect(WireCodec.encodedCount(snapshot) == WireCodec.encode(snapshot).count)
    }
}
