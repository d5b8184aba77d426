import DiffStream
import DiffStreamJSON
import Foundation
import Testing
import TestSupport

/// The one-pass reader of an event's data (`WireCodec.decodeEventData`), against the tree reader: what
/// the Swift client read events with before (``JSONParser`` and the tree decoders).
struct WireEventDataTests {
    static func read(_ text: String, _ content: WireEventData.Content) throws(WireError) -> WireEventData {
        try WireCodec.decodeEventData(Array(text.utf8), carrying: content)
    }

    /// Malformed data, for each content: thrown, with the offset and reason `JSONParser` gives.
    @Test(arguments: [
        #"{"feed":"a","from":1,"version":2,"ops":[{"op":"delete","item":"x"}"#,  // truncated
        #"{"feed":"a","from":1,"version":2,"ops":[{"op":"delete","item":"x"#,
        #"{"feed":"a","version":2,"sections":[{"id":"s","items":[{"id":"x","kind":"k","model":{"#,
        #"{"feed":"a","ops":[]} x"#, #"{"feed":"a","ops":[],}"#, "", " ",
        #"{"feed":"a","ops":[],"feed":"b"}"#,  // duplicate keys, known and unknown, at every level
        #"{"feed":"a","ops":[],"\u006fps":[]}"#, #"{"x":1,"ops":[],"x":2}"#,
        #"{"ops":[{"op":"delete","item":"x","item":"y"}]}"#, #"{"ops":[{"op":"delete","op":"move"}]}"#,
        #"{"ops":[{"op":"insert","item":{"id":"a","kind":"k","id":"b"},"section":"s"}]}"#,
        #"{"ops":[{"op":"update","item":"a","kind":"k","model":{"n":1,"n":2}}]}"#,
        #"{"sections":[{"id":"a","id":"b"}]}"#,
        #"{"version":01,"ops":[]}"#, #"{"version":1.,"ops":[]}"#, #"{"version":-,"ops":[]}"#,  // bad numbers
        #"{"feed":"\ud800","ops":[]}"#, #"{"feed":"\x","ops":[]}"#, "{\"feed\":\"a\u{1}\",\"ops\":[]}",
        #"{"ops":[{"op":"delete","item":"x"}]]"#, #"{"ops":[{"op":"delete" "item":"x"}]}"#, #"{"ops":nul}"#,
        #"{"ops":[{"op":"update","item":"a","kind":"k","model":"#, #"{ops:[]}"#,
        #"{"ops":[{"op":"update","item":"a","kind":"k","model":"# + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "}]}",
    ])
    func malformedDataIsThrownAsTheTreeReaderReportsIt(text: String) {
        let expected: JSONParseError
        do {
            _ = try JSONParser.parse(text, numbersBeyondDouble: .infinity)
            Issue.record("the oracle accepts \(text)")
            return
        } catch {
            expected = error
        }
        for content in [WireEventData.Content.snapshot, .batch, .none] {
            #expect(throws: WireError.malformed(expected), "\(content): \(text)") { try Self.read(text, content) }
        }
    }

    /// Invalid UTF-8 in a string, or outside one.
    @Test(arguments: [[0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF]] as [[UInt8]])
    func invalidUTF8IsMalformed(bytes: [UInt8]) {
        let text = Array(#"{"feed":""#.utf8) + bytes + Array(#"","ops":[]}"#.utf8)
        for data in [text, Array(#"{"ops":[]}"#.utf8) + bytes] {
            let expected = Result { () throws(JSONParseError) in try JSONParser.parse(data, numbersBeyondDouble: .infinity) }
            guard case .failure(let error) = expected else { Issue.record("the oracle accepts \(data)"); continue }
            #expect(throws: WireError.malformed(error)) { try WireCodec.decodeEventData(data, carrying: .batch) }
        }
    }

    /// The members an event carries are read when they have their type, and are nil otherwise, as the
    /// client read them from a tree (`Int(exactly:)` of the number's `Double`).
    @Test(arguments: [
        (#"{"feed":"a","history":"h","from":6,"version":7,"error":"e","detail":"d"}"#, "a", "h", 6, 7, "e", "d"),
        (#"{"feed":1,"history":null,"from":"6","version":7.0,"error":[],"detail":{"x":1}}"#, nil, nil, nil, 7, nil, nil),
        (#"{"version":7.5,"from":7e0}"#, nil, nil, 7, nil, nil, nil),
        (#"{"version":1e400,"from":-0}"#, nil, nil, 0, nil, nil, nil),
        (#"{"version":9223372036854775807,"from":9007199254740993}"#, nil, nil, 9_007_199_254_740_992, nil, nil, nil),
        (#"{"version":true,"from":-12e-1}"#, nil, nil, nil, nil, nil, nil),
        (#"{"f\u0065ed":"x\u00e9","\u0076ersion":70E-1,"other":{"feed":"no"}}"#, "xé", nil, nil, 7, nil, nil),
        (#" [ "feed" ] "#, nil, nil, nil, nil, nil, nil), (#""feed""#, nil, nil, nil, nil, nil, nil), ("null", nil, nil, nil, nil, nil, nil),
    ] as [(String, String?, String?, Int?, Int?, String?, String?)])
    func membersAreReadWhenTheyHaveTheirType(text: String, feed: String?, history: String?, from: Int?, version: Int?, error: String?, detail: String?) throws {
        let data = try Self.read(text, .none)
        #expect(data == WireEventData(feed: feed, history: history, from: from, version: version, error: error, detail: detail, body: .success(.none)))
        #expect(try data == Oracle.read(Array(text.utf8), .none).get())
    }

    /// Every operation, with members in any order (`op` last), unknown members, escaped keys, anchors
    /// given as `null` or left out, and models kept exactly.
    @Test func aBatchWithEveryOperation() throws {
        let text = #"""
            {"ops":[
              {"section":"s1","op":"deleteSection"},
              {"before":null,"section":{"model":{"b":1e+400,"a":1},"id":"s2","kind":5},"op":"insertSection"},
              {"op":"moveSection","section":"s2","before":"s3","model":{"ignored":true}},
              {"op":"updateSection","section":"s2","model":12345678901234567890},
              {"op":"delete","item":"i1","x":[1,{"y":null}]},
              {"op":"insert","item":{"id":"i2","kind":"card","model":[0.1000,-0]},"section":"s2","before":"i3"},
              {"op":"move","item":"i2","section":"s3"},
              {"\u006fp":"upd\u0061te","item":"i2","kind":"card","model":{"t":"\u00e9"},"id":"ignored"},
              {"op":"update","item":"i4","kind":"card"}
            ],"feed":"f","version":9,"from":8,"history":"h"}
            """#
        let data = try Self.read(text, .batch)
        let expected = WireBatch([
            .deleteSection("s1"),
            .insertSection(WireSection(id: "s2", model: try JSONModel(parsing: #"{"a":1,"b":1e400}"#)), before: nil),
            .moveSection("s2", before: "s3"),
            .updateSection(WireSection(id: "s2", model: try JSONModel(parsing: "12345678901234567890"))),
            .delete("i1"),
            .insert(WireItem(id: "i2", kind: "card", model: try JSONModel(parsing: "[0.1,0]")), section: "s2", before: "i3"),
            .move("i2", section: "s3", before: nil),
            .update(WireItem(id: "i2", kind: "card", model: try JSONModel(parsing: #"{"t":"é"}"#))),
            .update(WireItem(id: "i4", kind: "card", model: JSONModel())),
        ])
        #expect(data == WireEventData(feed: "f", history: "h", from: 8, version: 9, body: .success(.batch(expected))))
        #expect(try data.batch().operations[1] == expected.operations[1])
        #expect(String(describing: try data.batch().operations[3]).contains("12345678901234567890"))
        #expect(Oracle.lossy(data) == Oracle.read(Array(text.utf8), .batch))
    }

    /// A body of the wrong shape is kept, with the members read (also those after it), and it is the
    /// first problem in document order, as the tree decoders name it.
    @Test(arguments: [
        (#"{"ops":{},"feed":"a","from":1,"version":2}"#, "ops: expected an array"),
        (#"{"feed":"a","from":1,"version":2}"#, "ops: expected an array"),
        (#"{"feed":"a","ops":null}"#, "ops: expected an array"),
        (#"{"feed":"a","ops":[1]}"#, "ops[0]: expected an operation object"),
        (#"{"feed":"a","ops":[{"op":"nope"}]}"#, "ops[0]: expected an operation object"),
        (#"{"feed":"a","ops":[{"op":1,"item":"x"}]}"#, "ops[0]: expected an operation object"),
        (#"{"feed":"a","ops":[{"item":"x"}]}"#, "ops[0]: expected an operation object"),
        (#"{"feed":"a","ops":[{"op":"insert","item":"x","section":"s"}]}"#, "ops[0].item: expected an object"),
        (#"{"feed":"a","ops":[{"op":"insert","item":{"id":"x"},"section":"s"}]}"#, "ops[0].item.kind: expected a non-empty string"),
        (#"{"feed":"a","ops":[{"op":"insert","item":{"id":"x","kind":""},"section":"s"}]}"#, "ops[0].item.kind"),
        (#"{"feed":"a","ops":[{"op":"insert","item":{"id":"x","kind":"k"},"section":"s","before":5}]}"#, "ops[0].before: expected a string"),
        (#"{"feed":"a","ops":[{"op":"insert","item":{"id":"","kind":"k"},"section":"s"}]}"#, "ops[0].item.id: invalid id"),
        (#"{"feed":"a","ops":[{"op":"insert","item":{"id":"x","kind":"k"}}]}"#, "ops[0].section: expected a string"),
        (#"{"feed":"a","ops":[{"op":"delete","item":{"id":"x"}}]}"#, "ops[0].item: expected a string"),
        (#"{"feed":"a","ops":[{"op":"update","kind":"k","id":"x"}]}"#, "ops[0].id: expected a string"),
        (#"{"feed":"a","ops":[{"op":"update","item":"x","kind":7}]}"#, "ops[0].kind: expected a non-empty string"),
        (#"{"feed":"a","ops":[{"op":"insertSection","section":"s"}]}"#, "ops[0].section: expected an object"),
        (#"{"feed":"a","ops":[{"op":"insertSection","section":{"model":1}}]}"#, "ops[0].section.id: expected a string"),
        (#"{"feed":"a","ops":[{"op":"moveSection","section":"s","before":[]}]}"#, "ops[0].before: expected a string"),
        (#"{"feed":"a","ops":[{"op":"move","item":"x","section":null}]}"#, "ops[0].section: expected a string"),
        (#"{"feed":"a","ops":[{"op":"delete","item":"x"},{"op":"delete","item":1},{"op":"nope"}]}"#, "ops[1].item: expected a string"),
        ("{\"feed\":\"a\",\"ops\":[{\"op\":\"delete\",\"item\":\"\(String(repeating: "x", count: 257))\"}]}", "ops[0].item: invalid id"),
        ("{\"feed\":\"a\",\"ops\":[{\"op\":\"update\",\"item\":\"x\",\"kind\":\"\(String(repeating: "é", count: 129))\"}]}", "ops[0].kind"),
    ] as [(String, String)])
    func shapeProblemsAreKeptWithTheMembers(text: String, problem: String) throws {
        let data = try Self.read(text, .batch)
        #expect(data.feed == "a")
        guard case .failure(let error) = data.body else { Issue.record("accepted \(text)"); return }
        #expect(error.description.hasPrefix(problem), "\(error)")
        #expect(throws: error) { try data.batch() }
        #expect(try data == Oracle.read(Array(text.utf8), .batch).get())
    }

    /// Snapshot data reads as the snapshot document does, with its members.
    @Test func snapshotData() throws {
        let text = #"{"feed":"home","history":"h","version":7,"sections":[{"id":"s","model":{"n":1e400},"items":[{"id":"a","kind":"k","model":{"b":2,"a":1}}]}],"ops":5}"#
        let data = try Self.read(text, .snapshot)
        #expect(data.feed == "home" && data.history == "h" && data.version == 7 && data.from == nil)
        #expect(try data.snapshot() == (try WireCodec.decodeSnapshot(Array(text.utf8))))
        #expect(try data.snapshot().item(withID: "a")?.model.description == #"{"a":1,"b":2}"#)
        #expect(throws: WireError.shape(path: "ops", expected: "an array")) { try data.batch() }
        #expect(Oracle.lossy(data) == Oracle.read(Array(text.utf8), .snapshot))
        for (refused, problem) in [
            (#"{"feed":"a","version":1}"#, "sections: expected an array"),
            (#"{"sections":[{"id":"a"},{"id":"a"}],"feed":"a","version":1}"#, "duplicate section id 'a'"),
            (#"{"feed":"a","sections":[{"id":"a","items":[{"id":1}]}],"version":1}"#, "sections[0].items[0].id: expected a string"),
        ] {
            let data = try Self.read(refused, .snapshot)
            #expect(data.feed == "a" && data.version == 1)
            #expect((try? data.snapshot()) == nil)
            if case .failure(let error) = data.body { #expect(error.description.contains(problem), "\(error)") }
            #expect(try data == Oracle.read(Array(refused.utf8), .snapshot).get())
        }
    }

    /// Data read without a body: `sections` and `ops` are ignored, whatever they hold.
    @Test func dataWithoutABody() throws {
        let data = try Self.read(#"{"feed":"a","detail":"gone","sections":5,"ops":[{"op":"nope"}]}"#, .none)
        #expect(data == WireEventData(feed: "a", detail: "gone", body: .success(.none)))
        #expect(throws: WireError.shape(path: "sections", expected: "an array")) { try data.snapshot() }
    }

    /// Bytes without contiguous storage are read alike.
    @Test func bytesWithoutContiguousStorage() throws {
        let text = #"{"feed":"a","from":1,"version":2,"ops":[{"op":"update","item":"x","kind":"k","model":1e400}]}"#
        let bytes = Array(text.utf8).lazy.map { $0 }
        #expect(try WireCodec.decodeEventData(bytes, carrying: .batch) == (try Self.read(text, .batch)))
        #expect(throws: WireError.self) { try WireCodec.decodeEventData(bytes.dropLast(), carrying: .batch) }
    }

    /// The batches the engine makes for the diff cases (`checks/fixtures/vector-batches.jsonl`),
    /// as event data: read as the tree reads them, and (with the vectors) each turns `old` into `new`.
    @Test func theVectorBatches() throws {
        let lines = try String(contentsOf: TestFixtures.vectorBatches, encoding: .utf8).split(separator: "\n")
        #expect(lines.count >= 300)
        let vectors = try String(contentsOf: TestFixtures.diffCases, encoding: .utf8).split(separator: "\n")
        #expect(vectors.count == lines.count)
        for (index, line) in lines.enumerated() {
            let data = try WireCodec.decodeEventData(Array(line.utf8), carrying: .batch)
            #expect(Oracle.lossy(data) == Oracle.read(Array(line.utf8), .batch), "line \(index + 1)")
            guard index < vectors.count else { continue }
            let vector = try JSONParser.parse(String(vectors[index]))
            let old = try WireCodec.decodeSnapshot(vector["old"] ?? .null)
            let new = try WireCodec.decodeSnapshot(vector["new"] ?? .null)
            #expect(try old.applying(data.batch()) == new, "line \(index + 1)")
        }
    }
}

/// The tree reader, as the Swift client read events before: ``JSONParser`` (numbers beyond `Double`
/// read as infinity), the members from the tree, and the tree decoders for the body (models rounded
/// to `Double`s).
enum Oracle {
    static func read(_ bytes: [UInt8], _ content: WireEventData.Content) -> Result<WireEventData, WireError> {
        let value: JSONValue
        do { value = try JSONParser.parse(bytes, numbersBeyondDouble: .infinity) } catch { return .failure(.malformed(error)) }
        let body: Result<WireEventData.Body, WireError>
        switch content {
        case .snapshot: body = Result { () throws(WireError) in WireEventData.Body.snapshot(try WireCodec.decodeSnapshot(value)) }
        case .batch: body = Result { () throws(WireError) in WireEventData.Body.batch(try WireCodec.decodeOperations(value["ops"] ?? .null)) }
        case .none: body = .success(.none)
        }
        return .success(WireEventData(
            feed: value["feed"]?.stringValue, history: value["history"]?.stringValue,
            from: value["from"]?.numberValue.flatMap { Int(exactly: $0) }, version: value["version"]?.numberValue.flatMap { Int(exactly: $0) },
            error: value["error"]?.stringValue, detail: value["detail"]?.stringValue, body: body))
    }

    /// What a read gives with each model rounded as a tree rounds it, to compare with ``read(_:_:)``.
    static func lossy(_ result: Result<WireEventData, WireError>) -> Result<WireEventData, WireError> {
        result.map { data in
            var data = data
            switch data.body {
            case .success(.batch(let batch)): data.body = .success(.batch(lossy(batch)))
            case .success(.snapshot(let snapshot)): data.body = .success(.snapshot(lossy(snapshot)))
            default: break
            }
            return data
        }
    }

    static func lossy(_ data: WireEventData) -> Result<WireEventData, WireError> { lossy(.success(data)) }

    static func lossy(_ model: JSONModel) -> JSONModel { JSONModel(model.value) }
    static func lossy(_ section: WireSection) -> WireSection { WireSection(id: section.id, model: lossy(section.model)) }
    static func lossy(_ item: WireItem) -> WireItem { WireItem(id: item.id, kind: item.kind, model: lossy(item.model)) }

    static func lossy(_ batch: WireBatch) -> WireBatch {
        WireBatch(batch.operations.map { operation in
            switch operation {
            case .insertSection(let section, let before): .insertSection(lossy(section), before: before)
            case .updateSection(let section): .updateSection(lossy(section))
            case .insert(let item, let section, let before): .insert(lossy(item), section: section, before: before)
            case .update(let item): .update(lossy(item))
            default: operation
            }
        })
    }

    static func lossy(_ snapshot: WireSnapshot) -> WireSnapshot {
        let sections = snapshot.sections.enumerated().map { index, section in
            Section(lossy(section), items: snapshot.items(atSectionIndex: index).map { lossy($0) })
        }
        return (try? WireSnapshot(sections: sections)) ?? snapshot
    }
}
