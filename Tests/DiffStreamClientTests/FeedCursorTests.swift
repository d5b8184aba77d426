import DiffStream
import DiffStreamJSON
import Testing
@testable import DiffStreamClient

struct FeedCursorTests {
    static func snapshot(_ json: String) throws -> WireSnapshot { try WireCodec.decodeSnapshot(Array(json.utf8)) }
    static func batch(_ json: String) throws -> WireBatch { try WireCodec.decodeOperations(JSONParser.parse(json)) }

    /// The rule for each batch (docs/protocol.md, spec of #24): apply, skip a duplicate, or resync.
    @Test(arguments: [
        ("h", 3, 4, "applied"), ("h", 2, 3, "duplicate"), ("h", 1, 2, "duplicate"),
        ("h", 4, 5, "gap"), ("other", 3, 4, "gap"), ("h", 2, 4, "gap"),
    ])
    func batchRule(_ history: String, _ from: Int, _ version: Int, _ expected: String) throws {
        var cursor = FeedCursor()
        _ = cursor.receiveSnapshot(try Self.snapshot(#"{"sections":[{"id":"s","items":[]}]}"#), history: "h", version: 3, eventID: "ds1.h.3")
        let outcome = cursor.receiveBatch(try Self.batch(#"[{"op":"updateSection","section":"s","model":1}]"#), history: history, from: from, version: version, eventID: "x")
        switch (outcome, expected) {
        case (.applied, "applied"), (.duplicate, "duplicate"), (.gap, "gap"): break
        default: Issue.record("\(outcome) for \(history) \(from)→\(version), expected \(expected)")
        }
        #expect(cursor.eventID == (expected == "gap" ? nil : expected == "applied" ? "x" : "ds1.h.3"))
    }

    /// A section deleted and inserted again by the next batch (found by the property test: the
    /// snapshot kept the deleted section's index entry).
    @Test func sectionDeletedThenInsertedAgain() throws {
        var cursor = FeedCursor()
        _ = cursor.receiveSnapshot(try Self.snapshot(#"{"sections":[{"id":"a","items":[{"id":"i","kind":"k","model":1}]},{"id":"b","items":[]}]}"#),
                                   history: "h", version: 1, eventID: "1")
        #expect(cursor.receiveBatch(try Self.batch(#"[{"op":"deleteSection","section":"a"}]"#), history: "h", from: 1, version: 2, eventID: "2") == .applied)
        #expect(cursor.receiveBatch(try Self.batch(#"[{"op":"insertSection","section":{"id":"a","model":null},"before":"b"}]"#), history: "h", from: 2, version: 3, eventID: "3") == .applied)
        #expect(cursor.snapshot?.sectionIDs == ["a", "b"])
    }
}

struct FeedMessageTests {
    /// A batch's models are kept exactly as the server wrote them, also numbers no `Double` holds.
    @Test func batchModelsAreExact() throws {
        let data = #"{"feed":"n","from":1,"version":2,"ops":[{"op":"insert","item":{"id":"i","kind":"k","model":[1e+400,1.23456789012345678901234e+23]},"section":"s","before":null},{"op":"update","item":"j","kind":"k","model":{"a":12345678901234567890}},{"op":"insertSection","section":{"id":"t","model":{"b":1e+400}},"before":null},{"op":"updateSection","section":"s","model":-1e-400},{"op":"delete","item":"x"}]}"#
        guard case .batch(_, _, _, _, let batch, _) = try FeedMessage.decode(SSEEvent(type: "batch", data: data), defaultFeed: nil) else {
            Issue.record("not a batch"); return
        }
        let models: [String] = batch.operations.compactMap {
            switch $0 {
            case .insert(let item, _, _), .update(let item): item.model.description
            case .insertSection(let section, _), .updateSection(let section): section.model.description
            default: nil
            }
        }
        #expect(models == ["[1e+400,1.23456789012345678901234e+23]", #"{"a":12345678901234567890}"#, #"{"b":1e+400}"#, "-1e-400"])
    }
}
