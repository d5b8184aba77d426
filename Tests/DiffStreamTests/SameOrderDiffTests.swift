@testable import DiffStream
import TestSupport
import Testing

/// The diff's path for a change of contents only (`Snapshot.sameOrderUpdates`) gives exactly the batch
/// of the general path (`Snapshot.diffByTables`), and is taken only when sections and items keep their
/// ids and order; seeded snapshots of every change style.
struct SameOrderDiffTests {
    @Test(arguments: ChangeStyle.allCases)
    func theBatchIsTheGeneralPathsOne(style: ChangeStyle) {
        var rng = SeededGenerator(seed: 39)
        for _ in 0..<300 {
            let old = randomSnapshot(using: &rng, sections: Int.random(in: 0...4, using: &rng), items: Int.random(in: 0...25, using: &rng), idSpace: 40)
            let new = derive(old, style: style, using: &rng)
            let general = TestSnapshot.diffByTables(from: old, to: new)
            #expect(TestSnapshot.diff(from: old, to: new) == general)
            let sameOrder = old.sectionIDs == new.sectionIDs && old.sectionIDs.allSatisfy { old.items(inSection: $0)!.map(\.id) == new.items(inSection: $0)!.map(\.id) }
            #expect((TestSnapshot.sameOrderUpdates(from: old, to: new) != nil) == sameOrder)
        }
    }
}
