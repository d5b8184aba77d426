import DiffStream
import DiffStreamClient
import DiffStreamJSON
import Foundation
import TestSupport
import Testing

/// A small typed section and item: small value ranges, so that content changes are frequent.
struct DiffableTestSection: Identifiable, Equatable, Sendable {
    var id: String
    var title = 0
}

struct DiffableTestItem: Identifiable, Equatable, Sendable {
    var id: String
    var kind = 0
    var text = 0
}

typealias DiffableTestSnapshot = Snapshot<DiffableTestSection, DiffableTestItem>

/// One line of `checks/fixtures/diff-cases.jsonl` (see its README).
struct DiffableVector: CustomTestStringConvertible, Sendable {
    var name: String
    var old: WireSnapshot
    var new: WireSnapshot
    var testDescription: String { name }

    /// The vectors file (`TestFixtures.diffCases`).
    static var url: URL { TestFixtures.diffCases }

    static func loadAll() throws -> [DiffableVector] {
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let value = try JSONParser.parse(String(line))
            return DiffableVector(
                name: value["name"]?.stringValue ?? "?",
                old: try WireCodec.decodeSnapshot(value["old"] ?? .null),
                new: try WireCodec.decodeSnapshot(value["new"] ?? .null))
        }
    }
}

/// Replays calls on the model and checks everything the translation promises.
enum DiffableCheck {
    /// Replays `calls` on a model of `old`: no call may trap, the ids must end as in `new`, and exactly the
    /// sections and items on both sides whose content differs must be reloaded or reconfigured (items for
    /// which `needsNewCell` holds reloaded, the others reconfigured), each once.
    static func verify<S, I>(
        _ calls: [DiffableCall<S.ID, I.ID>], from old: Snapshot<S, I>, to new: Snapshot<S, I>,
        needsNewCell: (I, I) -> Bool = { _, _ in false }, context: @autoclosure () -> String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var model = DiffableModel(old)
        do {
            try model.replay(calls)
        } catch {
            Issue.record("\(error)\n\(context())\ncalls:\n\(lines(calls))", sourceLocation: sourceLocation)
            return
        }
        let expected = DiffableModel<S.ID, I.ID>(new)
        #expect(model.outline == expected.outline,
                "replaying the calls gives\n\(model)\ninstead of\n\(expected)\n\(context())\ncalls:\n\(lines(calls))", sourceLocation: sourceLocation)
        let changedSections = new.sections.filter { section in old.section(withID: section.id).map { $0 != section } ?? false }.map(\.id)
        let changedItems = new.items.filter { item in old.item(withID: item.id).map { $0 != item } ?? false }
        let reloaded = changedItems.filter { needsNewCell(old.item(withID: $0.id)!, $0) }.map(\.id)
        let reconfigured = changedItems.filter { !needsNewCell(old.item(withID: $0.id)!, $0) }.map(\.id)
        #expect(Set(model.reloadedSections) == Set(changedSections) && model.reloadedSections.count == changedSections.count,
                "reloaded sections \(model.reloadedSections), expected \(changedSections)\n\(context())", sourceLocation: sourceLocation)
        #expect(Set(model.reconfiguredItems) == Set(reconfigured) && model.reconfiguredItems.count == reconfigured.count,
                "reconfigured \(model.reconfiguredItems), expected \(reconfigured)\n\(context())", sourceLocation: sourceLocation)
        #expect(Set(model.reloadedItems) == Set(reloaded) && model.reloadedItems.count == reloaded.count,
                "reloaded items \(model.reloadedItems), expected \(reloaded)\n\(context())", sourceLocation: sourceLocation)
        #expect(calls.allSatisfy { !isEmptyList($0) }, "a call with no ids\n\(lines(calls))", sourceLocation: sourceLocation)
    }

    /// The bounds a batch of the server's diff gets: at most one call more than operations, no more
    /// item moves than `move`s, no more ids placed than `insert`s and `move`s, no more ids deleted than
    /// `delete`s and `move`s.
    static func verifyFew<S, I>(_ calls: [DiffableCall<S.ID, I.ID>], for batch: Batch<S, I>, context: @autoclosure () -> String,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        let counts = batch.counts
        var moves = 0, placed = 0, deleted = 0
        for call in calls {
            switch call {
            case .moveItemBefore, .moveItemAfter: moves += 1
            case .appendItems(let ids, _), .insertItems(let ids, _): placed += ids.count
            case .deleteItems(let ids): deleted += ids.count
            default: break
            }
        }
        #expect(calls.count <= batch.operations.count + 1, "\(calls.count) calls for \(batch.operations.count) operations\n\(context())\n\(lines(calls))",
                sourceLocation: sourceLocation)
        #expect(moves <= counts[.move], "\(moves) moveItem calls for \(counts[.move]) moves\n\(context())", sourceLocation: sourceLocation)
        #expect(moves + placed <= counts[.move] + counts[.insert], "\(context())\n\(lines(calls))", sourceLocation: sourceLocation)
        #expect(deleted <= counts[.move] + counts[.delete], "\(context())\n\(lines(calls))", sourceLocation: sourceLocation)
    }

    static func isEmptyList<S, I>(_ call: DiffableCall<S, I>) -> Bool {
        switch call {
        case .appendSections(let ids), .insertSections(let ids, _), .deleteSections(let ids), .reloadSections(let ids): ids.isEmpty
        case .appendItems(let ids, _), .insertItems(let ids, _), .deleteItems(let ids), .reconfigureItems(let ids), .reloadItems(let ids): ids.isEmpty
        case .moveSectionBefore, .moveSectionAfter, .moveItemBefore, .moveItemAfter: false
        }
    }

    static func lines<S, I>(_ calls: [DiffableCall<S, I>]) -> String {
        calls.map(\.description).joined(separator: "\n")
    }
}

/// Seeded snapshots and batches over small alphabets, so that items often change section, sections
/// are often empty, inserted or deleted, and ids come back after being deleted.
struct DiffableGenerator {
    var rng: SeededGenerator
    var sectionIDs: [String]
    var itemIDs: [String]

    init(seed: UInt64, sections: Int, items: Int) {
        rng = SeededGenerator(seed: seed)
        sectionIDs = (0..<sections).map { "S\($0)" }
        itemIDs = (0..<items).map { "i\($0)" }
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func chance(_ percent: Int) -> Bool { int(1...100) <= percent }

    mutating func snapshot() -> DiffableTestSnapshot {
        let sections = sectionIDs.shuffled(using: &rng).prefix(int(0...sectionIDs.count))
        var snapshot = DiffableTestSnapshot()
        guard !sections.isEmpty else { return snapshot }
        try! snapshot.appendSections(sections.map { DiffableTestSection(id: $0, title: int(0...1)) })
        for id in itemIDs.shuffled(using: &rng).prefix(int(0...itemIDs.count)) {
            try! snapshot.appendItems([DiffableTestItem(id: id, kind: int(0...1), text: int(0...1))], toSection: sections.randomElement(using: &rng)!)
        }
        return snapshot
    }

    /// A snapshot derived from `old` by a few random edits (closer to real updates than an unrelated one).
    mutating func edit(_ old: DiffableTestSnapshot) -> DiffableTestSnapshot {
        var state = old
        for _ in 0..<int(0...6) {
            if let operation = operation(on: state) { try! state.apply(Batch([operation])) }
        }
        return state
    }

    /// A random batch that applies to `old`, with the operations in any order (not only the server's):
    /// deletes and inserts of the same id, moves into empty sections, several updates of one item.
    mutating func batch(for old: DiffableTestSnapshot) -> (Batch<DiffableTestSection, DiffableTestItem>, DiffableTestSnapshot) {
        var state = old
        var operations: [DiffStream.Operation<DiffableTestSection, DiffableTestItem>] = []
        for _ in 0..<int(1...14) {
            guard let operation = operation(on: state) else { continue }
            try! state.apply(Batch([operation]))
            operations.append(operation)
        }
        return (Batch(operations), state)
    }

    /// One random operation that applies to `state`, or `nil` if the one drawn cannot.
    mutating func operation(on state: DiffableTestSnapshot) -> DiffStream.Operation<DiffableTestSection, DiffableTestItem>? {
        let sections = state.sectionIDs
        let items = state.itemIDs
        func anchor(in section: String, avoiding id: String? = nil) -> String? {
            let candidates = state.items(inSection: section)!.map(\.id).filter { $0 != id }
            return chance(30) ? nil : candidates.randomElement(using: &rng)
        }
        switch int(0...7) {
        case 0:
            return items.randomElement(using: &rng).map { .delete($0) }
        case 1:
            return sections.randomElement(using: &rng).map { .deleteSection($0) }
        case 2:
            guard let id = sectionIDs.filter({ !state.contains(section: $0) }).randomElement(using: &rng) else { return nil }
            return .insertSection(DiffableTestSection(id: id, title: int(0...1)), before: chance(30) ? nil : sections.randomElement(using: &rng))
        case 3:
            guard let id = sections.randomElement(using: &rng) else { return nil }
            return .moveSection(id, before: chance(40) ? nil : sections.filter { $0 != id }.randomElement(using: &rng))
        case 4:
            return sections.randomElement(using: &rng).map { .updateSection(DiffableTestSection(id: $0, title: int(0...2))) }
        case 5:
            guard let id = itemIDs.filter({ !state.contains(item: $0) }).randomElement(using: &rng),
                  let section = sections.randomElement(using: &rng) else { return nil }
            return .insert(DiffableTestItem(id: id, kind: int(0...1), text: int(0...2)), section: section, before: anchor(in: section))
        case 6:
            guard let id = items.randomElement(using: &rng), let section = sections.randomElement(using: &rng) else { return nil }
            return .move(id, section: section, before: anchor(in: section, avoiding: id))
        default:
            return items.randomElement(using: &rng).map { .update(DiffableTestItem(id: $0, kind: int(0...1), text: int(0...2))) }
        }
    }
}

struct DiffableTranslationTests {
    typealias Section = DiffableTestSection
    typealias Item = DiffableTestItem
    typealias Call = DiffableCall<String, String>

    static func snapshot(_ sections: [(String, [String])]) -> DiffableTestSnapshot {
        try! DiffableTestSnapshot(sections: sections.map { DiffStream.Section(Section(id: $0.0), items: $0.1.map { Item(id: $0) }) })
    }

    static func calls(from old: DiffableTestSnapshot, to new: DiffableTestSnapshot) throws -> [Call] {
        try DiffableTranslation.calls(for: DiffableTestSnapshot.diff(from: old, to: new), from: old)
    }

    // MARK: Every shared vector

    @Test func theVectorsFileIsPresent() throws {
        #expect(try DiffableVector.loadAll().count >= 300, "expected the diff cases at \(DiffableVector.url.path)")
    }

    /// Items whose kind changed get `reloadItems` (a new cell), the others `reconfigureItems`.
    @Test(arguments: try DiffableVector.loadAll())
    func everySharedVector(vector: DiffableVector) throws {
        let batch = WireSnapshot.diff(from: vector.old, to: vector.new)
        let kindChanged: (WireItem, WireItem) -> Bool = { $0.kind != $1.kind }
        let calls = try DiffableTranslation.calls(for: batch, from: vector.old, needsNewCell: kindChanged)
        DiffableCheck.verify(calls, from: vector.old, to: vector.new, needsNewCell: kindChanged, context: vector.name)
        DiffableCheck.verifyFew(calls, for: batch, context: vector.name)
    }

    // MARK: Seeded random pairs against the model

    /// 8 × 600 pairs: half unrelated snapshots over the same small alphabets, half a few edits apart.
    @Test(arguments: 0..<8)
    func seededRandomPairs(chunk: Int) throws {
        for round in 0..<600 {
            let seed = UInt64(chunk * 1_000_003 + round)
            var generator = DiffableGenerator(seed: seed, sections: round % 3 == 0 ? 2 : 5, items: round % 4 == 0 ? 4 : 14)
            let old = generator.snapshot()
            let new = round % 2 == 0 ? generator.snapshot() : generator.edit(old)
            let batch = DiffableTestSnapshot.diff(from: old, to: new)
            let calls = try DiffableTranslation.calls(for: batch, from: old)
            let context = "seed \(seed)\nold:\n\(old)\nnew:\n\(new)\nbatch:\n\(batch.debugString)"
            DiffableCheck.verify(calls, from: old, to: new, context: context)
            DiffableCheck.verifyFew(calls, for: batch, context: context)
        }
    }

    /// 8 × 400 batches written at random rather than by the diff: any valid order, ids deleted and
    /// inserted again, moves into empty sections, updates of items that are then deleted.
    @Test(arguments: 0..<8)
    func seededRandomBatches(chunk: Int) throws {
        for round in 0..<400 {
            let seed = UInt64(chunk * 1_000_003 + round) | 1 << 40
            var generator = DiffableGenerator(seed: seed, sections: round % 3 == 0 ? 2 : 4, items: round % 4 == 0 ? 3 : 10)
            let old = generator.snapshot()
            let (batch, new) = generator.batch(for: old)
            let calls = try DiffableTranslation.calls(for: batch, from: old, needsNewCell: { $0.kind != $1.kind })
            DiffableCheck.verify(calls, from: old, to: new, needsNewCell: { $0.kind != $1.kind },
                                 context: "seed \(seed)\nold:\n\(old)\nbatch:\n\(batch.debugString)")
        }
    }

    // MARK: The moves with no direct call, and the few calls

    @Test func aMoveToTheEndOfASectionGoesAfterItsLastItem() throws {
        let old = Self.snapshot([("a", ["1", "2", "3"]), ("b", ["4"])])
        #expect(try Self.calls(from: old, to: Self.snapshot([("a", ["2", "3", "1"]), ("b", ["4"])])) == [.moveItemAfter("1", afterItem: "3")])
        #expect(try Self.calls(from: old, to: Self.snapshot([("a", ["2", "3"]), ("b", ["4", "1"])])) == [.moveItemAfter("1", afterItem: "4")])
    }

    @Test func aMoveIntoAnEmptySectionIsADeleteAndAnAppend() throws {
        let old = Self.snapshot([("a", ["1", "2"]), ("b", [])])
        let calls = try Self.calls(from: old, to: Self.snapshot([("a", ["2"]), ("b", ["1"])]))
        #expect(calls == [.deleteItems(["1"]), .appendItems(["1"], toSection: "b")])
    }

    @Test func aNewSectionFilledWithMovedAndNewItemsTakesOneDeleteAndOneAppend() throws {
        let old = Self.snapshot([("a", ["1", "2", "3"])])
        let new = Self.snapshot([("a", ["2"]), ("n", ["1", "9", "3"])])
        #expect(try Self.calls(from: old, to: new) == [
            .appendSections(["n"]),
            .deleteItems(["3", "1"]),
            .appendItems(["1", "9", "3"], toSection: "n"),
        ])
    }

    @Test func runsOfInsertsAreOneCall() throws {
        let old = Self.snapshot([("a", ["1", "5"]), ("b", [])])
        let new = Self.snapshot([("x", []), ("y", []), ("a", ["1", "2", "3", "5", "6", "7"]), ("b", ["8", "9"])])
        #expect(try Self.calls(from: old, to: new) == [
            .insertSections(["x", "y"], beforeSection: "a"),
            .appendItems(["6", "7"], toSection: "a"),
            .insertItems(["2", "3"], beforeItem: "5"),
            .appendItems(["8", "9"], toSection: "b"),
        ])
    }

    @Test func aSectionMovedToTheEndGoesAfterTheLastSection() throws {
        let old = Self.snapshot([("a", ["1"]), ("b", []), ("c", [])])
        #expect(try Self.calls(from: old, to: Self.snapshot([("b", []), ("c", []), ("a", ["1"])])) == [.moveSectionAfter("a", afterSection: "c")])
        #expect(try Self.calls(from: old, to: Self.snapshot([("c", []), ("a", ["1"]), ("b", [])])) == [.moveSectionBefore("c", beforeSection: "a")])
    }

    @Test func deletesAreOneCallAndADeletedSectionTakesItsItems() throws {
        let old = Self.snapshot([("a", ["1", "2", "3"]), ("b", ["4"]), ("c", ["5"])])
        #expect(try Self.calls(from: old, to: Self.snapshot([("a", ["2"])])) == [.deleteItems(["1", "3"]), .deleteSections(["b", "c"])])
    }

    @Test func contentChangesReconfigureOrReloadAtTheEnd() throws {
        let old = try DiffableTestSnapshot(sections: [
            DiffStream.Section(Section(id: "a"), items: [Item(id: "1"), Item(id: "2"), Item(id: "3")]),
        ])
        let new = try DiffableTestSnapshot(sections: [
            DiffStream.Section(Section(id: "a", title: 1), items: [Item(id: "3"), Item(id: "1", text: 1), Item(id: "2", kind: 1), Item(id: "4", kind: 1)]),
        ])
        let calls = try DiffableTranslation.calls(for: DiffableTestSnapshot.diff(from: old, to: new), from: old, needsNewCell: { $0.kind != $1.kind })
        #expect(calls == [
            .appendItems(["4"], toSection: "a"),
            .moveItemBefore("3", beforeItem: "1"),
            .reloadSections(["a"]),
            .reconfigureItems(["1"]),
            .reloadItems(["2"]),
        ])
    }

    @Test func aMoveThatLeavesTheItemInPlaceMakesNoCall() throws {
        let old = Self.snapshot([("a", ["1", "2"]), ("b", ["3"])])
        let batch = Batch<Section, Item>([.move("2", section: "a", before: nil), .move("1", section: "a", before: "2"), .moveSection("b", before: nil)])
        #expect(try DiffableTranslation.calls(for: batch, from: old).isEmpty)
    }

    @Test func anItemUpdatedThenDeletedOrInsertedByTheBatchIsNotReconfigured() throws {
        let old = Self.snapshot([("a", ["1", "2"])])
        let batch = Batch<Section, Item>([
            .update(Item(id: "1", text: 1)), .delete("1"),
            .insert(Item(id: "9"), section: "a", before: nil), .update(Item(id: "9", text: 1)),
            .delete("2"), .insert(Item(id: "2", text: 1), section: "a", before: "9"),
        ])
        // "2" is deleted with "1" (no call in between names it) and then joins the block before "9".
        #expect(try DiffableTranslation.calls(for: batch, from: old) == [
            .deleteItems(["1", "2"]),
            .appendItems(["2", "9"], toSection: "a"),
            .reconfigureItems(["2"]),
        ])
    }

    @Test func aBatchThatDoesNotApplyIsRefusedWithItsOperation() {
        let old = Self.snapshot([("a", ["1"])])
        let batch = Batch<Section, Item>([.delete("1"), .move("1", section: "a", before: nil)])
        #expect(throws: BatchError(operationIndex: 1, kind: .move, reason: .unknownItem("1"))) {
            try DiffableTranslation.calls(for: batch, from: old)
        }
        let other = Batch<Section, Item>([.insert(Item(id: "2"), section: "b", before: nil)])
        #expect(throws: BatchError(operationIndex: 0, kind: .insert, reason: .unknownSection("b"))) {
            try DiffableTranslation.calls(for: other, from: old)
        }
    }
}

/// The two forms without a batch: a whole snapshot into an empty diffable snapshot, and one snapshot
/// to another (a resync).
struct DiffableTranslationWithoutBatchTests {
    @Test(arguments: 0..<4)
    func buildingGivesTheSnapshotsIds(chunk: Int) throws {
        for round in 0..<100 {
            let seed = UInt64(chunk * 1_000_003 + round) | 1 << 41
            var generator = DiffableGenerator(seed: seed, sections: 4, items: 10)
            let snapshot = generator.snapshot()
            let calls = DiffableTranslation.calls(building: snapshot)
            DiffableCheck.verify(calls, from: DiffableTestSnapshot(), to: snapshot, context: "seed \(seed)\n\(snapshot)")
            #expect(calls.count == (snapshot.numberOfSections == 0 ? 0 : 1 + snapshot.sections.filter { snapshot.numberOfItems(inSection: $0.id)! > 0 }.count))
        }
    }

    @Test func aResyncReconfiguresWhatChanged() {
        let old = try! DiffableTestSnapshot(sections: [DiffStream.Section(DiffableTestSection(id: "a"), items: [DiffableTestItem(id: "1"), DiffableTestItem(id: "2")])])
        let new = try! DiffableTestSnapshot(sections: [DiffStream.Section(DiffableTestSection(id: "a"), items: [DiffableTestItem(id: "2"), DiffableTestItem(id: "1", text: 1)])])
        let calls = DiffableTranslation.calls(from: old, to: new)
        #expect(calls == [.moveItemBefore("2", beforeItem: "1"), .reconfigureItems(["1"])])
        DiffableCheck.verify(calls, from: old, to: new, context: "resync")
    }

    @Test func operationsAreTranslatedAsTheirBatch() throws {
        let old = DiffableTranslationTests.snapshot([("a", ["1", "2"])])
        let operations: [DiffStream.Operation<DiffableTestSection, DiffableTestItem>] = [.move("1", section: "a", before: nil)]
        #expect(try DiffableTranslation.calls(for: operations, from: old) == [.moveItemAfter("1", afterItem: "2")])
    }
}
