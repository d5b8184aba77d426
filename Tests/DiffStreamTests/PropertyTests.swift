import DiffStream
import TestSupport
import Testing

/// The shapes of change the generator favours, so that each is exercised often.
enum ChangeStyle: CaseIterable {
    case random, reversal, rotation, crossSection, sectionShuffle, contentOnly, toEmpty, fromEmpty, single
}

func randomSnapshot(using rng: inout SeededGenerator, sections: Int, items: Int, idSpace: Int) -> TestSnapshot {
    var snapshot = TestSnapshot()
    let sectionIDs = (0..<sections).map { "s\($0)" }.shuffled(using: &rng)
    try! snapshot.appendSections(sectionIDs.map { TestSection(id: $0, title: Bool.random(using: &rng) ? "t" : "") })
    guard !sectionIDs.isEmpty else { return snapshot }
    let ids = Array((0..<idSpace).shuffled(using: &rng).prefix(items))
    for id in ids {
        let section = sectionIDs.randomElement(using: &rng)!
        try! snapshot.appendItems([TestItem(id: id, text: Bool.random(using: &rng) ? "a" : "b")], toSection: section)
    }
    return snapshot
}

func derive(_ old: TestSnapshot, style: ChangeStyle, using rng: inout SeededGenerator) -> TestSnapshot {
    var new = old
    switch style {
    case .random:
        return randomSnapshot(using: &rng, sections: Int.random(in: 0...5, using: &rng), items: Int.random(in: 0...30, using: &rng), idSpace: 40)
    case .reversal:
        let sections = old.sections.map { Section($0, items: old.items(inSection: $0.id)!.reversed()) }
        return try! TestSnapshot(sections: sections)
    case .rotation:
        let sections = old.sections.map { section -> Section<TestSection, TestItem> in
            var items = old.items(inSection: section.id)!
            if !items.isEmpty { items.append(items.removeFirst()) }
            return Section(section, items: items)
        }
        return try! TestSnapshot(sections: sections)
    case .crossSection:
        for item in old.items where Int.random(in: 0..<3, using: &rng) == 0 {
            let target = old.sectionIDs.randomElement(using: &rng)!
            try! new.moveItem(item.id, toSection: target, before: nil)
        }
    case .sectionShuffle:
        let ids = old.sectionIDs.shuffled(using: &rng)
        for id in ids.dropLast(Int.random(in: 0...1, using: &rng)) { try! new.moveSection(id, toBefore: nil) }
        if Bool.random(using: &rng), let first = new.sectionIDs.first { try! new.deleteSections([first]) }
        try! new.insertSections([TestSection(id: "new")], at: Int.random(in: 0...new.numberOfSections, using: &rng))
        try! new.appendItems([TestItem(id: 1000)], toSection: "new")
    case .contentOnly:
        for item in old.items where Bool.random(using: &rng) { try! new.updateItem(TestItem(id: item.id, text: "changed")) }
        for section in old.sections where Bool.random(using: &rng) { try! new.updateSection(TestSection(id: section.id, title: "changed")) }
    case .toEmpty:
        return TestSnapshot()
    case .fromEmpty, .single:
        return try! makeSnapshot([("s0", [Int.random(in: 0..<5, using: &rng)])])
    }
    return new
}

extension Snapshot {
    mutating func insertSections(_ sections: [SectionType], at index: Int) throws {
        if index < numberOfSections { try insertSections(sections, beforeSection: self.sections[index].id) } else { try appendSections(sections) }
    }
}

struct PropertyTests {
    @Test(arguments: 0..<8)
    func randomPairsConvergeWithMinimalCounts(batch: Int) throws {
        for round in 0..<500 {
            let seed = UInt64(batch * 1_000_003 + round)
            var rng = SeededGenerator(seed: seed)
            let style = ChangeStyle.allCases[round % ChangeStyle.allCases.count]
            let old = style == .fromEmpty
                ? TestSnapshot()
                : randomSnapshot(using: &rng, sections: Int.random(in: 1...4, using: &rng), items: Int.random(in: 0...25, using: &rng), idSpace: 40)
            let new = derive(old, style: style, using: &rng)
            let diff = TestSnapshot.diff(from: old, to: new)
            let applied = try? old.applying(diff)
            #expect(applied == new, "seed \(seed) (\(style)): applying the batch does not give the new snapshot\nold:\n\(old)\nnew:\n\(new)")
            let expected = referenceMinimalCounts(from: old, to: new)
            #expect(diff.counts == expected, "seed \(seed) (\(style)): counts \(diff.counts) but minimal is \(expected)")
            if applied != new || diff.counts != expected { return }
        }
    }

    @Test func longestIncreasingSubsequenceMatchesTheQuadraticOracle() {
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<2000 {
            let values = (0..<Int.random(in: 0...40, using: &rng)).map { _ in Int.random(in: 0..<30, using: &rng) }
            // Via the diff: a single section whose items are reordered so the LIS decides the moves.
            let unique = Array(Set(values)).shuffled(using: &rng)
            let old = try! makeSnapshot([("a", unique.sorted())])
            let new = try! makeSnapshot([("a", unique)])
            let moves = TestSnapshot.diff(from: old, to: new).counts[.move]
            #expect(moves == unique.count - quadraticLISLength(unique.map { old.index(ofItem: $0)! }))
        }
    }
}
