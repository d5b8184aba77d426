import DiffStream

/// An independent, deliberately simple computation of the minimal operation counts (quadratic longest
/// increasing subsequence, dictionaries everywhere), used as the oracle for property tests.
func referenceMinimalCounts<S: Identifiable & Equatable, I: Identifiable & Equatable>(
    from old: Snapshot<S, I>, to new: Snapshot<S, I>
) -> OperationCounts {
    var counts = OperationCounts()
    let oldSectionIDs = old.sectionIDs
    let newSectionIDs = new.sectionIDs
    let newSectionSet = Set(newSectionIDs)
    let oldSectionSet = Set(oldSectionIDs)
    counts[.deleteSection] = oldSectionIDs.filter { !newSectionSet.contains($0) }.count
    counts[.insertSection] = newSectionIDs.filter { !oldSectionSet.contains($0) }.count
    let commonSections = newSectionIDs.filter { oldSectionSet.contains($0) }.map { old.index(ofSection: $0)! }
    counts[.moveSection] = commonSections.count - quadraticLISLength(commonSections)
    counts[.updateSection] = newSectionIDs.filter { id in
        old.section(withID: id).map { $0 != new.section(withID: id)! } ?? false
    }.count

    var deletes = 0, inserts = 0, moves = 0, updates = 0
    for section in old.sections where newSectionSet.contains(section.id) {
        for item in old.items(inSection: section.id)! where !new.contains(item: item.id) { deletes += 1 }
    }
    for section in new.sections {
        var stayingOldPositions: [Int] = []
        for item in new.items(inSection: section.id)! {
            guard let oldItem = old.item(withID: item.id) else { inserts += 1; continue }
            if oldItem != item { updates += 1 }
            if old.section(containingItem: item.id)!.id == section.id {
                stayingOldPositions.append(old.index(ofItem: item.id)!)
            } else {
                moves += 1
            }
        }
        moves += stayingOldPositions.count - quadraticLISLength(stayingOldPositions)
    }
    counts[.delete] = deletes
    counts[.insert] = inserts
    counts[.move] = moves
    counts[.update] = updates
    return counts
}

func quadraticLISLength(_ values: [Int]) -> Int {
    var best = [Int](repeating: 1, count: values.count)
    for i in values.indices {
        for j in 0..<i where values[j] < values[i] { best[i] = max(best[i], best[j] + 1) }
    }
    return best.max() ?? 0
}
