import DiffStream
import Testing

struct DiffTests {
    func check(_ old: [(String, [Int])], _ new: [(String, [Int])], file: StaticString = #filePath) throws -> Batch<TestSection, TestItem> {
        let a = try makeSnapshot(old)
        let b = try makeSnapshot(new)
        let batch = TestSnapshot.diff(from: a, to: b)
        #expect(try a.applying(batch) == b)
        return batch
    }

    @Test func identicalSnapshotsGiveAnEmptyBatch() throws {
        #expect(try check([("a", [1, 2, 3])], [("a", [1, 2, 3])]).isEmpty)
        #expect(try check([], []).isEmpty)
    }

    @Test func reversalMovesAllButOne() throws {
        let batch = try check([("a", [1, 2, 3, 4, 5])], [("a", [5, 4, 3, 2, 1])])
        #expect(batch.counts == OperationCounts([.move: 4]))
    }

    @Test func rotationIsOneMove() throws {
        let batch = try check([("a", [1, 2, 3, 4])], [("a", [2, 3, 4, 1])])
        #expect(batch.operations == [.move(1, section: "a", before: nil)])
    }

    @Test func crossSectionMoveIsOneMove() throws {
        let batch = try check([("a", [1, 2]), ("b", [3])], [("a", [1]), ("b", [2, 3])])
        #expect(batch.operations == [.move(2, section: "b", before: 3)])
    }

    @Test func itemLeavesADeletedSectionBeforeItGoes() throws {
        let batch = try check([("a", [1, 2]), ("b", [3])], [("b", [3, 1])])
        #expect(batch.operations == [.move(1, section: "b", before: nil), .deleteSection("a")])
    }

    @Test func insertedSectionIsEmptyAndFilledByInsertsAndMoves() throws {
        let batch = try check([("a", [1, 2])], [("n", [9, 2]), ("a", [1])])
        #expect(batch.operations == [
            .insertSection(TestSection(id: "n"), before: "a"),
            .move(2, section: "n", before: nil),
            .insert(TestItem(id: 9), section: "n", before: 2),
        ])
    }

    @Test func contentChangesAreUpdatesOnly() throws {
        let a = try TestSnapshot(sections: [Section(TestSection(id: "a"), items: [TestItem(id: 1), TestItem(id: 2)])])
        let b = try TestSnapshot(sections: [Section(TestSection(id: "a", title: "T"), items: [TestItem(id: 1), TestItem(id: 2, text: "x")])])
        let batch = TestSnapshot.diff(from: a, to: b)
        #expect(batch.operations == [.updateSection(TestSection(id: "a", title: "T")), .update(TestItem(id: 2, text: "x"))])
        #expect(try a.applying(batch) == b)
    }

    @Test func deletesOfItemsInDeletedSectionsAreNotSeparateOps() throws {
        let batch = try check([("a", [1, 2]), ("b", [3, 4])], [("b", [4])])
        #expect(batch.operations == [.delete(3), .deleteSection("a")])
    }

    @Test func diffIsDeterministic() throws {
        let a = try makeSnapshot([("a", [1, 2, 3, 4, 5, 6]), ("b", [7, 8])])
        let b = try makeSnapshot([("b", [8, 3, 7]), ("c", [6, 1]), ("a", [5, 2, 9])])
        #expect(TestSnapshot.diff(from: a, to: b) == TestSnapshot.diff(from: a, to: b))
    }

    @Test func invalidBatchIsATypedErrorAndLeavesTheSnapshotAlone() throws {
        var snapshot = try makeSnapshot([("a", [1])])
        let batch = Batch<TestSection, TestItem>([.delete(1), .move(5, section: "a", before: nil)])
        #expect(throws: BatchError(operationIndex: 1, kind: .move, reason: .unknownItem("5"))) { try snapshot.apply(batch) }
        #expect(snapshot.itemIDs == [1])
        let badAnchor = Batch<TestSection, TestItem>([.insert(TestItem(id: 2), section: "a", before: 9)])
        #expect(throws: BatchError.self) { try snapshot.apply(badAnchor) }
    }
}
