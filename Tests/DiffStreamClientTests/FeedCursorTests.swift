import DiffStream
import DiffStreamJSON
import Testing
import TestSupport
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

struct FeedCursorOrderTests {
    static let empty = #"{"sections":[{"id":"s","items":[]}]}"#

    /// A snapshot of the history held at a lower version is stale: skipped, the position kept. The same
    /// version is a resync; another history a new one.
    @Test(arguments: [("h", 2, "stale"), ("h", 3, "resync"), ("h", 9, "resync"), ("other", 1, "newHistory")])
    func snapshotOrder(_ history: String, _ version: Int, _ expected: String) throws {
        var cursor = FeedCursor()
        _ = cursor.receiveSnapshot(try FeedCursorTests.snapshot(Self.empty), history: "h", version: 3, eventID: "ds1.h.3")
        let outcome = cursor.receiveSnapshot(try FeedCursorTests.snapshot(Self.empty), history: history, version: version, eventID: "x")
        switch (outcome, expected) {
        case (.stale, "stale"), (.snapshot(.resync), "resync"), (.snapshot(.newHistory), "newHistory"): break
        default: Issue.record("\(outcome) for \(history) v\(version), expected \(expected)")
        }
        #expect(cursor.version == (expected == "stale" ? 3 : version))
        #expect(cursor.eventID == (expected == "stale" ? "ds1.h.3" : "x"))
    }

    /// A feed deleted and created again: its next snapshot is a new history, whatever its history field.
    @Test(arguments: ["h2", nil] as [String?])
    func snapshotAfterDeletionIsANewHistory(_ history: String?) throws {
        var cursor = FeedCursor()
        _ = cursor.receiveSnapshot(try FeedCursorTests.snapshot(Self.empty), history: "h", version: 3, eventID: "ds1.h.3")
        cursor.markDeleted()
        #expect(cursor.snapshot == nil && cursor.eventID == nil && cursor.version == nil)
        #expect(cursor.receiveSnapshot(try FeedCursorTests.snapshot(Self.empty), history: history, version: 1, eventID: "y") == .snapshot(.newHistory))
        // Only the first snapshot after the deletion.
        #expect(cursor.receiveSnapshot(try FeedCursorTests.snapshot(Self.empty), history: history, version: 1, eventID: "y") == .snapshot(.resync))
    }

    /// Property: whatever order snapshots and batches of a few histories arrive in (replays, stale
    /// copies, gaps), the version held never moves backwards within a history, and a change of history
    /// is only ever a snapshot reported as `.newHistory`.
    @Test(arguments: 0..<50)
    func versionsOnlyMoveForwardWithinAHistory(_ seed: Int) throws {
        var random = SeededGenerator(seed: UInt64(seed))
        var cursor = FeedCursor()
        let batch = try FeedCursorTests.batch(#"[{"op":"updateSection","section":"s","model":1}]"#)
        let snapshot = try FeedCursorTests.snapshot(Self.empty)
        for _ in 0..<200 {
            let before = (history: cursor.history, version: cursor.version)
            let history = ["a", "b", "c"][Int.random(in: 0..<3, using: &random)]
            let version = Int.random(in: 1...12, using: &random)
            let outcome: FeedCursor.Outcome
            if Bool.random(using: &random) {
                outcome = cursor.receiveSnapshot(snapshot, history: history, version: version, eventID: "\(history).\(version)")
            } else {
                let from = Int.random(in: 0..<version, using: &random)
                outcome = cursor.receiveBatch(batch, history: history, from: from, version: version, eventID: "\(history).\(version)")
            }
            if let held = before.version, cursor.history == before.history, let now = cursor.version {
                #expect(now >= held, "seed \(seed): \(held) → \(now) in history \(cursor.history ?? "-") (\(outcome))")
            }
            if before.history != nil, cursor.history != before.history {
                #expect(outcome == .snapshot(.newHistory), "seed \(seed): history changed by \(outcome)")
            }
        }
    }
}
