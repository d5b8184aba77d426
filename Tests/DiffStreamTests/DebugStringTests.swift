import DiffStream
import DiffStreamJSON
import Testing

/// A section that describes itself, as a view model's test would want it.
private struct Titled: Identifiable, Equatable, CustomStringConvertible {
    var id: String
    var title: String
    var description: String { "\(id) section" }
}

/// An item that describes itself in the spirit of `banner("This is a banner")`.
private struct Line: Identifiable, Equatable, CustomStringConvertible {
    var id: String
    var text: String
    var description: String { "\(id)(\"\(text)\")" }
}

extension SnapshotTests {
    @Test func debugStringIsOneLinePerSectionWithItsItems() throws {
        let snapshot = try Snapshot {
            Section(Titled(id: "banner", title: "")) { Line(id: "banner", text: "This is a banner") }
            Section(Titled(id: "list", title: "")) {
                Line(id: "a", text: "first")
                Line(id: "b", text: "second")
            }
            Section(Titled(id: "empty", title: "")) {}
        }
        #expect(snapshot.debugString == """
            banner section: [banner("This is a banner")]
            list section: [a("first"), b("second")]
            empty section: []
            """)
    }

    @Test func debugStringOfAnEmptySnapshotIsEmpty() {
        #expect(TestSnapshot().debugString == "")
    }

    @Test func debugStringWithoutDescriptionsUsesSwiftsRenderingOfTheValues() throws {
        let snapshot = try TestSnapshot(sections: [Section(TestSection(id: "a", title: "A"), items: [TestItem(id: 1, text: "one")])])
        #expect(snapshot.debugString == #"TestSection(id: "a", title: "A"): [TestItem(id: 1, text: "one")]"#)
    }

    @Test func debugStringOfTheWireFormShowsIdsKindsAndModels() throws {
        var snapshot = WireSnapshot()
        try snapshot.appendSections([WireSection(id: "todo", model: ["title": "To do"]), WireSection(id: "done")])
        try snapshot.appendItems([WireItem(id: "t1", kind: "todo", model: ["title": "milk", "done": false]), WireItem(id: "t2", kind: "note")], toSection: "todo")
        #expect(snapshot.debugString == """
            todo {"title":"To do"}: [todo t1 {"done":false,"title":"milk"}, note t2]
            done: []
            """)
    }
}

struct BatchTests {
    @Test func debugStringIsOneOperationPerLine() throws {
        var before = WireSnapshot()
        try before.appendSections([WireSection(id: "a"), WireSection(id: "b"), WireSection(id: "gone")])
        try before.appendItems([WireItem(id: "1", kind: "k"), WireItem(id: "2", kind: "k", model: 1)], toSection: "a")
        try before.appendItems([WireItem(id: "3", kind: "k")], toSection: "gone")
        var after = WireSnapshot()
        try after.appendSections([WireSection(id: "b", model: ["n": 2]), WireSection(id: "a"), WireSection(id: "new")])
        try after.appendItems([WireItem(id: "2", kind: "k", model: 2), WireItem(id: "4", kind: "k")], toSection: "a")
        try after.appendItems([WireItem(id: "1", kind: "k")], toSection: "b")
        let batch = WireSnapshot.diff(from: before, to: after)
        #expect(try before.applying(batch) == after)
        #expect(batch.debugString == """
            insertSection new at end
            moveSection b before a
            move 1 to b at end
            insert k 4 into a at end
            deleteSection gone
            updateSection b {"n":2}
            update k 2 2
            """)
    }

    @Test(arguments: [
        (WireOperation.deleteSection("s"), "deleteSection s"),
        (.insertSection(WireSection(id: "s", model: ["t": 1]), before: "x"), #"insertSection s {"t":1} before x"#),
        (.insertSection(WireSection(id: "s"), before: nil), "insertSection s at end"),
        (.moveSection("s", before: "x"), "moveSection s before x"),
        (.moveSection("s", before: nil), "moveSection s to end"),
        (.updateSection(WireSection(id: "s", model: ["t": 2])), #"updateSection s {"t":2}"#),
        (.delete("i"), "delete i"),
        (.insert(WireItem(id: "i", kind: "card", model: ["rank": "A"]), section: "s", before: "j"), #"insert card i {"rank":"A"} into s before j"#),
        (.insert(WireItem(id: "i", kind: "card"), section: "s", before: nil), "insert card i into s at end"),
        (.move("i", section: "s", before: "j"), "move i to s before j"),
        (.move("i", section: "s", before: nil), "move i to s at end"),
        (.update(WireItem(id: "i", kind: "card", model: ["rank": "K"])), #"update card i {"rank":"K"}"#),
    ])
    func eachOperationHasItsLine(operation: WireOperation, line: String) {
        #expect(WireBatch([operation]).debugString == line)
        #expect(WireBatch([operation, operation]).debugString == "\(line)\n\(line)")
    }

    @Test func anEmptyBatchIsTheEmptyString() {
        #expect(WireBatch().debugString == "")
    }
}
