import DiffStream
import Testing
import TestSupport

struct SnapshotTests {
    @Test func appendingSectionsAndItemsKeepsOrderAndIndexes() throws {
        var snapshot = TestSnapshot()
        try snapshot.appendSections([TestSection(id: "a"), TestSection(id: "b")])
        try snapshot.appendItems([TestItem(id: 1), TestItem(id: 2)], toSection: "a")
        try snapshot.appendItems([TestItem(id: 3)])
        #expect(snapshot.numberOfSections == 2)
        #expect(snapshot.numberOfItems == 3)
        #expect(snapshot.sectionIDs == ["a", "b"])
        #expect(snapshot.itemIDs == [1, 2, 3])
        #expect(snapshot.numberOfItems(inSection: "a") == 2)
        #expect(snapshot.section(containingItem: 3)?.id == "b")
        #expect(snapshot.index(ofItem: 2) == 1)
        #expect(snapshot.position(ofItem: 3) == ItemPosition(section: 1, index: 0))
        #expect(snapshot.index(ofSection: "b") == 1)
        #expect(snapshot.description == "a: 1 2\nb: 3")
    }

    @Test func insertBeforeAndAfterUpdatesPositions() throws {
        var snapshot = try makeSnapshot([("a", [1, 4])])
        try snapshot.insertItems([TestItem(id: 2)], beforeItem: 4)
        try snapshot.insertItems([TestItem(id: 3)], afterItem: 2)
        try snapshot.insertSections([TestSection(id: "z")], beforeSection: "a")
        try snapshot.insertSections([TestSection(id: "y")], afterSection: "a")
        #expect(snapshot.description == "z:\na: 1 2 3 4\ny:")
        #expect(snapshot.position(ofItem: 4) == ItemPosition(section: 1, index: 3))
    }

    @Test func deletingItemsAndSections() throws {
        var snapshot = try makeSnapshot([("a", [1, 2, 3]), ("b", [4, 5])])
        try snapshot.deleteItems([2, 5])
        #expect(snapshot.description == "a: 1 3\nb: 4")
        #expect(snapshot.index(ofItem: 3) == 1)
        try snapshot.deleteSections(["a"])
        #expect(snapshot.description == "b: 4")
        #expect(!snapshot.contains(item: 1))
        #expect(snapshot.position(ofItem: 4) == ItemPosition(section: 0, index: 0))
        snapshot.deleteAllItems()
        #expect(snapshot.description == "b:")
        #expect(snapshot.numberOfItems == 0)
    }

    @Test func movingItemsWithinAndAcrossSections() throws {
        var snapshot = try makeSnapshot([("a", [1, 2, 3]), ("b", [4])])
        try snapshot.moveItem(1, afterItem: 3)
        #expect(snapshot.description == "a: 2 3 1\nb: 4")
        try snapshot.moveItem(3, beforeItem: 4)
        #expect(snapshot.description == "a: 2 1\nb: 3 4")
        try snapshot.moveItem(2, toSection: "b", before: nil)
        #expect(snapshot.description == "a: 1\nb: 3 4 2")
        #expect(snapshot.position(ofItem: 2) == ItemPosition(section: 1, index: 2))
        #expect(snapshot.position(ofItem: 1) == ItemPosition(section: 0, index: 0))
    }

    @Test func movingSections() throws {
        var snapshot = try makeSnapshot([("a", [1]), ("b", [2]), ("c", [3])])
        try snapshot.moveSection("a", afterSection: "c")
        #expect(snapshot.description == "b: 2\nc: 3\na: 1")
        try snapshot.moveSection("a", beforeSection: "b")
        #expect(snapshot.description == "a: 1\nb: 2\nc: 3")
        try snapshot.moveSection("a", toBefore: nil)
        #expect(snapshot.sectionIDs == ["b", "c", "a"])
        #expect(snapshot.position(ofItem: 1) == ItemPosition(section: 2, index: 0))
    }

    @Test func updatingContentKeepsPlace() throws {
        var snapshot = try makeSnapshot([("a", [1, 2])])
        try snapshot.updateItem(TestItem(id: 2, text: "new"))
        try snapshot.updateSection(TestSection(id: "a", title: "A"))
        #expect(snapshot.item(withID: 2)?.text == "new")
        #expect(snapshot.section(withID: "a")?.title == "A")
        #expect(snapshot.itemIDs == [1, 2])
    }

    @Test func duplicateIDsAreTypedErrorsNamingTheID() throws {
        var snapshot = try makeSnapshot([("a", [1])])
        #expect(throws: SnapshotError.duplicateSection("a")) { try snapshot.appendSections([TestSection(id: "a")]) }
        #expect(throws: SnapshotError.duplicateItem("1")) { try snapshot.appendItems([TestItem(id: 1)]) }
        #expect(throws: SnapshotError.duplicateItem("7")) { try snapshot.appendItems([TestItem(id: 7), TestItem(id: 7)]) }
        #expect(throws: SnapshotError.duplicateItem("5")) {
            _ = try makeSnapshot([("a", [5]), ("b", [5])])
        }
        // A failed mutation changes nothing.
        #expect(snapshot.description == "a: 1")
        #expect(SnapshotError.duplicateItem("7").errorDescription?.contains("'7'") == true)
    }

    @Test func unknownIDsAndBadAnchorsAreTypedErrors() throws {
        var snapshot = try makeSnapshot([("a", [1, 2]), ("b", [3])])
        #expect(throws: SnapshotError.unknownSection("x")) { try snapshot.appendItems([TestItem(id: 9)], toSection: "x") }
        #expect(throws: SnapshotError.unknownItem("9")) { try snapshot.deleteItems([9]) }
        #expect(throws: SnapshotError.unknownItem("9")) { try snapshot.moveItem(9, beforeItem: 1) }
        #expect(throws: SnapshotError.unknownSection("x")) { try snapshot.deleteSections(["x"]) }
        #expect(throws: SnapshotError.selfAnchor("1")) { try snapshot.moveItem(1, beforeItem: 1) }
        #expect(throws: SnapshotError.selfAnchor("a")) { try snapshot.moveSection("a", beforeSection: "a") }
        #expect(throws: SnapshotError.anchorInOtherSection(item: "3", section: "a")) {
            try snapshot.insertItem(TestItem(id: 8), inSection: "a", before: 3)
        }
        var empty = TestSnapshot()
        #expect(throws: SnapshotError.noSection) { try empty.appendItems([TestItem(id: 1)]) }
        #expect(snapshot.description == "a: 1 2\nb: 3")
    }

    @Test func equalityComparesOrderAndContent() throws {
        let one = try makeSnapshot([("a", [1, 2])])
        #expect(one == (try makeSnapshot([("a", [1, 2])])))
        #expect(one != (try makeSnapshot([("a", [2, 1])])))
        var changed = one
        try changed.updateItem(TestItem(id: 1, text: "x"))
        #expect(one != changed)
    }
}

/// ``Snapshot/withSameIDs(_:)``: the shortcut of a change of contents only.
struct SnapshotWithSameIDsTests {
    /// Sections `s0…` with items numbered from 0, `text` marking the round.
    static func sections(_ shape: [Int], text: String) -> [Section<TestSection, TestItem>] {
        var next = 0
        return shape.enumerated().map { index, count in
            let items = (0..<count).map { _ -> TestItem in defer { next += 1 }; return TestItem(id: next, text: text) }
            return Section(TestSection(id: "s\(index)", title: text), items: items)
        }
    }

    @Test(arguments: 0..<60)
    func sameIDsShareTheTablesAndAnythingElseIsRefused(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let shape = (0..<Int.random(in: 0...4, using: &random)).map { _ in Int.random(in: 0...5, using: &random) }
        let old = try TestSnapshot(sections: Self.sections(shape, text: "old"))
        var new = Self.sections(shape, text: "new")
        let sameShape: Bool
        switch Int.random(in: 0..<5, using: &random) {
        case 0:  // another section count
            new.append(Section(TestSection(id: "extra")))
            sameShape = false
        case 1:  // a section renamed
            if let index = new.indices.randomElement(using: &random) { new[index].section.id += "x"; sameShape = false } else { sameShape = true }
        case 2:  // two items swapped, or one dropped
            if let index = new.indices.filter({ new[$0].items.count >= 2 }).randomElement(using: &random) {
                if Bool.random(using: &random) { new[index].items.swapAt(0, 1) } else { new[index].items.removeLast() }
                sameShape = false
            } else { sameShape = true }
        case 3:  // an item's id changed to one unused
            if let index = new.indices.filter({ !new[$0].items.isEmpty }).randomElement(using: &random) { new[index].items[0].id = 1_000; sameShape = false } else { sameShape = true }
        default:
            sameShape = true
        }
        let shortcut = old.withSameIDs(new)
        #expect((shortcut != nil) == sameShape)
        if let shortcut {
            let built = try TestSnapshot(sections: new)
            #expect(shortcut == built)
            #expect(shortcut.items == built.items && shortcut.sections == built.sections)
            for item in built.items { #expect(shortcut.position(ofItem: item.id) == built.position(ofItem: item.id) && shortcut.item(withID: item.id) == item) }
            for section in built.sections { #expect(shortcut.index(ofSection: section.id) == built.index(ofSection: section.id)) }
        }
    }
}
