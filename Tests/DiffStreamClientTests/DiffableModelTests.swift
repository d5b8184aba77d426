import DiffStream
import DiffStreamClient
import Testing

/// What UIKit would do instead of performing a call: raise an exception or fail an assertion.
struct DiffableTrap: Error, CustomStringConvertible {
    var call: String
    var reason: String
    var description: String { "UIKit would raise on \(call): \(reason)" }
}

/// A model of `NSDiffableDataSourceSnapshot`'s semantics, for testing the translation on Linux: a list
/// of sections of item ids that the calls mutate, which traps wherever UIKit throws or asserts.
///
/// The rules, as UIKit and AppKit enforce them:
/// - identifiers are unique: a section id once among sections, an item id once among all items (an
///   appended or inserted id that is already there, or given twice, traps);
/// - every id a call names as existing (an anchor, a section to append to, an item or section to move,
///   delete, reload or reconfigure) must be in the snapshot;
/// - an item or section cannot be moved relative to itself;
/// - `insertItems(_:beforeItem:)` and `moveItem` put the item into the anchor's section;
/// - `deleteSections` removes the sections with their items; new sections are empty.
///
/// It also records what was reloaded or reconfigured, in order, to check those sets.
struct DiffableModel<SectionID: Hashable, ItemID: Hashable>: Equatable {
    struct Section: Equatable {
        var id: SectionID
        var items: [ItemID]
    }

    private(set) var sections: [Section] = []
    private(set) var reloadedSections: [SectionID] = []
    private(set) var reconfiguredItems: [ItemID] = []
    private(set) var reloadedItems: [ItemID] = []

    init(_ sections: [Section] = []) { self.sections = sections }

    init<S, I>(_ snapshot: Snapshot<S, I>) where S.ID == SectionID, I.ID == ItemID {
        sections = snapshot.sections.enumerated().map { index, section in
            Section(id: section.id, items: snapshot.items(atSectionIndex: index).map(\.id))
        }
    }

    /// The structure alone, without the reload and reconfigure records.
    var outline: [Section] { sections }

    /// Performs the calls in order; the first one UIKit would refuse traps.
    mutating func replay(_ calls: [DiffableCall<SectionID, ItemID>]) throws(DiffableTrap) {
        for (index, call) in calls.enumerated() {
            do {
                try perform(call)
            } catch {
                throw DiffableTrap(call: "call \(index) \(error.call)", reason: error.reason)
            }
        }
    }

    mutating func perform(_ call: DiffableCall<SectionID, ItemID>) throws(DiffableTrap) {
        func trap(_ reason: String) -> DiffableTrap { DiffableTrap(call: call.description, reason: reason) }
        switch call {
        case .appendSections(let ids):
            try requireNewSections(ids, trap)
            sections.append(contentsOf: ids.map { Section(id: $0, items: []) })
        case .insertSections(let ids, let anchor):
            let index = try sectionIndex(anchor, trap)
            try requireNewSections(ids, trap)
            sections.insert(contentsOf: ids.map { Section(id: $0, items: []) }, at: index)
        case .deleteSections(let ids):
            try requireDistinct(ids, trap)
            for id in ids { _ = try sectionIndex(id, trap) }
            sections.removeAll { ids.contains($0.id) }
        case .moveSectionBefore(let id, let anchor), .moveSectionAfter(let id, let anchor):
            let from = try sectionIndex(id, trap)
            _ = try sectionIndex(anchor, trap)
            guard id != anchor else { throw trap("a section cannot be moved relative to itself") }
            let section = sections.remove(at: from)
            let to = try sectionIndex(anchor, trap)
            if case .moveSectionAfter = call { sections.insert(section, at: to + 1) } else { sections.insert(section, at: to) }
        case .reloadSections(let ids):
            for id in ids { _ = try sectionIndex(id, trap) }
            reloadedSections += ids
        case .appendItems(let ids, let section):
            let index = try sectionIndex(section, trap)
            try requireNewItems(ids, trap)
            sections[index].items += ids
        case .insertItems(let ids, let anchor):
            let position = try itemPosition(anchor, trap)
            try requireNewItems(ids, trap)
            sections[position.section].items.insert(contentsOf: ids, at: position.index)
        case .deleteItems(let ids):
            try requireDistinct(ids, trap)
            for id in ids { _ = try itemPosition(id, trap) }
            for index in sections.indices { sections[index].items.removeAll { ids.contains($0) } }
        case .moveItemBefore(let id, let anchor), .moveItemAfter(let id, let anchor):
            let from = try itemPosition(id, trap)
            _ = try itemPosition(anchor, trap)
            guard id != anchor else { throw trap("an item cannot be moved relative to itself") }
            sections[from.section].items.remove(at: from.index)
            let to = try itemPosition(anchor, trap)
            let index = if case .moveItemAfter = call { to.index + 1 } else { to.index }
            sections[to.section].items.insert(id, at: index)
        case .reconfigureItems(let ids):
            for id in ids { _ = try itemPosition(id, trap) }
            reconfiguredItems += ids
        case .reloadItems(let ids):
            for id in ids { _ = try itemPosition(id, trap) }
            reloadedItems += ids
        }
    }

    // MARK: Checks

    private func sectionIndex(_ id: SectionID, _ trap: (String) -> DiffableTrap) throws(DiffableTrap) -> Int {
        guard let index = sections.firstIndex(where: { $0.id == id }) else { throw trap("section \(String(reflecting: id)) is not in the snapshot") }
        return index
    }

    private func itemPosition(_ id: ItemID, _ trap: (String) -> DiffableTrap) throws(DiffableTrap) -> (section: Int, index: Int) {
        for (section, content) in sections.enumerated() {
            if let index = content.items.firstIndex(of: id) { return (section, index) }
        }
        throw trap("item \(String(reflecting: id)) is not in the snapshot")
    }

    private func requireDistinct<ID: Hashable>(_ ids: [ID], _ trap: (String) -> DiffableTrap) throws(DiffableTrap) {
        var seen = Set<ID>()
        for id in ids where !seen.insert(id).inserted { throw trap("identifier \(String(reflecting: id)) is given twice") }
    }

    private func requireNewSections(_ ids: [SectionID], _ trap: (String) -> DiffableTrap) throws(DiffableTrap) {
        try requireDistinct(ids, trap)
        for id in ids where sections.contains(where: { $0.id == id }) {
            throw trap("section \(String(reflecting: id)) is already in the snapshot")
        }
    }

    private func requireNewItems(_ ids: [ItemID], _ trap: (String) -> DiffableTrap) throws(DiffableTrap) {
        try requireDistinct(ids, trap)
        for id in ids where sections.contains(where: { $0.items.contains(id) }) {
            throw trap("item \(String(reflecting: id)) is already in the snapshot")
        }
    }
}

extension DiffableModel: CustomStringConvertible {
    var description: String {
        sections.map { "\($0.id): " + $0.items.map { "\($0)" }.joined(separator: " ") }.joined(separator: " | ")
    }
}

/// The model traps exactly where UIKit does, and otherwise does what UIKit does.
struct DiffableModelTests {
    typealias Model = DiffableModel<String, String>
    typealias Call = DiffableCall<String, String>

    /// `a: 1 2 | b: 3 | c:`
    static func start() -> Model {
        Model([.init(id: "a", items: ["1", "2"]), .init(id: "b", items: ["3"]), .init(id: "c", items: [])])
    }

    static let refused: [(Call, String)] = [
        (.insertItems(["9"], beforeItem: "8"), "item \"8\" is not in the snapshot"),
        (.appendItems(["3"], toSection: "a"), "item \"3\" is already in the snapshot"),
        (.appendItems(["9", "9"], toSection: "a"), "identifier \"9\" is given twice"),
        (.appendItems(["9"], toSection: "z"), "section \"z\" is not in the snapshot"),
        (.moveItemBefore("1", beforeItem: "1"), "an item cannot be moved relative to itself"),
        (.moveItemAfter("1", afterItem: "1"), "an item cannot be moved relative to itself"),
        (.moveItemAfter("1", afterItem: "8"), "item \"8\" is not in the snapshot"),
        (.moveItemBefore("8", beforeItem: "1"), "item \"8\" is not in the snapshot"),
        (.deleteItems(["8"]), "item \"8\" is not in the snapshot"),
        (.reconfigureItems(["8"]), "item \"8\" is not in the snapshot"),
        (.reloadItems(["8"]), "item \"8\" is not in the snapshot"),
        (.appendSections(["b"]), "section \"b\" is already in the snapshot"),
        (.insertSections(["x"], beforeSection: "z"), "section \"z\" is not in the snapshot"),
        (.deleteSections(["z"]), "section \"z\" is not in the snapshot"),
        (.moveSectionBefore("a", beforeSection: "a"), "a section cannot be moved relative to itself"),
        (.moveSectionAfter("a", afterSection: "z"), "section \"z\" is not in the snapshot"),
        (.reloadSections(["z"]), "section \"z\" is not in the snapshot"),
    ]

    @Test(arguments: refused)
    func trapsWhereUIKitRaises(call: Call, reason: String) {
        var model = Self.start()
        #expect(throws: DiffableTrap.self) { try model.perform(call) }
        do {
            try model.perform(call)
        } catch {
            #expect(error.reason == reason)
        }
    }

    static let performed: [(Call, String)] = [
        (.insertItems(["8", "9"], beforeItem: "3"), "a: 1 2 | b: 8 9 3 | c: "),
        (.appendItems(["9"], toSection: "c"), "a: 1 2 | b: 3 | c: 9"),
        (.moveItemBefore("3", beforeItem: "1"), "a: 3 1 2 | b:  | c: "),
        (.moveItemAfter("1", afterItem: "2"), "a: 2 1 | b: 3 | c: "),
        (.moveItemAfter("1", afterItem: "3"), "a: 2 | b: 3 1 | c: "),
        (.deleteItems(["2", "3"]), "a: 1 | b:  | c: "),
        (.deleteSections(["a"]), "b: 3 | c: "),
        (.insertSections(["x", "y"], beforeSection: "b"), "a: 1 2 | x:  | y:  | b: 3 | c: "),
        (.appendSections(["x"]), "a: 1 2 | b: 3 | c:  | x: "),
        (.moveSectionBefore("c", beforeSection: "a"), "c:  | a: 1 2 | b: 3"),
        (.moveSectionAfter("a", afterSection: "c"), "b: 3 | c:  | a: 1 2"),
        (.moveSectionAfter("a", afterSection: "b"), "b: 3 | a: 1 2 | c: "),
    ]

    @Test(arguments: performed)
    func performsAsUIKitDoes(call: Call, result: String) throws {
        var model = Self.start()
        try model.perform(call)
        #expect(model.description == result)
    }

    @Test func deletingASectionDeletesItsItemsSoTheirIdsAreFreeAgain() throws {
        var model = Self.start()
        try model.replay([.deleteSections(["a"]), .appendItems(["1", "2"], toSection: "c")])
        #expect(model.description == "b: 3 | c: 1 2")
        #expect(throws: DiffableTrap.self) { try model.perform(.moveItemBefore("3", beforeItem: "9")) }
    }

    @Test func recordsReloadsAndReconfigures() throws {
        var model = Self.start()
        try model.replay([.reloadSections(["b"]), .reconfigureItems(["1", "3"]), .reloadItems(["2"])])
        #expect(model.reloadedSections == ["b"])
        #expect(model.reconfiguredItems == ["1", "3"])
        #expect(model.reloadedItems == ["2"])
        #expect(model.outline == Self.start().outline)
    }
}
