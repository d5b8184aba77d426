extension Snapshot {
    /// The batch of operations that turns `old` into `new`.
    ///
    /// The batch is minimal in every kind of operation:
    /// - a section or item that exists on both sides is never deleted and inserted again;
    /// - items that stay in their section keep the longest increasing subsequence of their old positions
    ///   in place and only the others move; an item that changes section is one move; sections likewise;
    /// - an update only where content differs (`==`), a `deleteSection` takes the items it still holds
    ///   with it, and an `insertSection` inserts an empty section that later inserts and moves fill.
    ///
    /// Order of the batch: item deletes, then section inserts and moves (from the last section of `new`
    /// to the first, each placed before its successor), then item inserts and moves (per new section,
    /// from its last item to its first), then section deletes, then updates. Every anchor therefore names
    /// something that exists when its operation is applied. The result is deterministic.
    ///
    /// - Complexity: O(n log n) time and O(n) memory in the number of sections and items; O(n) time
    ///   and no tables when `new` has `old`'s sections and items in the same order (only contents changed).
    @inlinable
    public static func diff(from old: Self, to new: Self) -> Batch<SectionType, ItemType> {
        if let updates = sameOrderUpdates(from: old, to: new) { return Batch(updates) }
        return diffByTables(from: old, to: new)
    }

    /// When `new` holds exactly `old`'s sections and items, in the same order, the batch is its content
    /// updates alone, in the order ``diff(from:to:)`` gives them (sections, then items, in `new`'s
    /// order): what ``diffByTables(from:to:)`` returns then, without building its tables. The most
    /// common write changes contents only. Nil when anything was added, removed or moved.
    /// - Complexity: O(n) in the number of sections and items, no allocation before the answer.
    @inlinable
    static func sameOrderUpdates(from old: Self, to new: Self) -> [Operation<SectionType, ItemType>]? {
        let sectionCount = new.sectionValues.count
        guard old.sectionValues.count == sectionCount else { return nil }
        for section in 0..<sectionCount {
            guard old.sectionValues[section].id == new.sectionValues[section].id else { return nil }
            let oldItems = old.itemValues[section], newItems = new.itemValues[section]
            guard oldItems.count == newItems.count else { return nil }
            for index in 0..<newItems.count where oldItems[index].id != newItems[index].id { return nil }
        }
        var operations: [Operation<SectionType, ItemType>] = []
        for section in 0..<sectionCount where old.sectionValues[section] != new.sectionValues[section] {
            operations.append(.updateSection(new.sectionValues[section]))
        }
        for section in 0..<sectionCount {
            let oldItems = old.itemValues[section], newItems = new.itemValues[section]
            for index in 0..<newItems.count where oldItems[index] != newItems[index] { operations.append(.update(newItems[index])) }
        }
        return operations
    }

    /// The general diff of ``diff(from:to:)``: ids matched through tables, longest increasing
    /// subsequences for what stays.
    /// - Complexity: O(n log n) time and O(n) memory in the number of sections and items.
    @inlinable
    static func diffByTables(from old: Self, to new: Self) -> Batch<SectionType, ItemType> {
        let oldSectionCount = old.sectionValues.count
        let newSectionCount = new.sectionValues.count

        // 1. Sections: match by id, then keep the longest increasing run of old positions in place.
        var oldSectionToNew = [Int](repeating: -1, count: oldSectionCount)
        var newSectionToOld = [Int](repeating: -1, count: newSectionCount)
        var commonSectionOldIndices: [Int] = []
        var commonSectionNewIndices: [Int] = []
        for (newIndex, section) in new.sectionValues.enumerated() {
            guard let oldIndex = old.sectionIndexByID[section.id] else { continue }
            newSectionToOld[newIndex] = oldIndex
            oldSectionToNew[oldIndex] = newIndex
            commonSectionOldIndices.append(oldIndex)
            commonSectionNewIndices.append(newIndex)
        }
        var sectionStays = [Bool](repeating: false, count: newSectionCount)
        for (member, newIndex) in zip(longestIncreasingSubsequenceMembers(commonSectionOldIndices), commonSectionNewIndices) where member {
            sectionStays[newIndex] = true
        }

        // 2. Items: classify every new item, mark the old items that survive.
        var oldOffsets = [Int](repeating: 0, count: oldSectionCount + 1)
        for index in 0..<oldSectionCount { oldOffsets[index + 1] = oldOffsets[index] + old.itemValues[index].count }
        var oldItemSurvives = [Bool](repeating: false, count: oldOffsets[oldSectionCount])
        var plans: [[ItemPlan]] = []
        plans.reserveCapacity(newSectionCount)
        var updatedItems: [ItemType] = []
        var stayingOldIndices: [Int] = []
        var stayingNewIndices: [Int] = []
        for newSection in 0..<newSectionCount {
            let items = new.itemValues[newSection]
            var plan = [ItemPlan](repeating: .insert, count: items.count)
            stayingOldIndices.removeAll(keepingCapacity: true)
            stayingNewIndices.removeAll(keepingCapacity: true)
            for (newIndex, item) in items.enumerated() {
                guard let position = old.itemPositionByID[item.id] else { continue }
                oldItemSurvives[oldOffsets[position.section] + position.index] = true
                if oldSectionToNew[position.section] == newSection {
                    plan[newIndex] = .stay
                    stayingOldIndices.append(position.index)
                    stayingNewIndices.append(newIndex)
                } else {
                    plan[newIndex] = .move
                }
                if old.itemValues[position.section][position.index] != item { updatedItems.append(item) }
            }
            if !stayingOldIndices.isEmpty {
                let members = longestIncreasingSubsequenceMembers(stayingOldIndices)
                for (member, newIndex) in zip(members, stayingNewIndices) where !member { plan[newIndex] = .move }
            }
            plans.append(plan)
        }

        var operations: [Operation<SectionType, ItemType>] = []

        // 3. Item deletes, in old order (items of deleted sections go with their section).
        for oldSection in 0..<oldSectionCount where oldSectionToNew[oldSection] >= 0 {
            let base = oldOffsets[oldSection]
            for (index, item) in old.itemValues[oldSection].enumerated() where !oldItemSurvives[base + index] {
                operations.append(.delete(item.id))
            }
        }

        // 4. Section inserts and moves, last to first, each before its successor in `new`.
        for newIndex in stride(from: newSectionCount - 1, through: 0, by: -1) where !sectionStays[newIndex] {
            let successor = newIndex + 1 < newSectionCount ? new.sectionValues[newIndex + 1].id : nil
            let section = new.sectionValues[newIndex]
            if newSectionToOld[newIndex] < 0 {
                operations.append(.insertSection(section, before: successor))
            } else {
                operations.append(.moveSection(section.id, before: successor))
            }
        }

        // 5. Item inserts and moves, per section, last to first, each before its successor.
        for newSection in 0..<newSectionCount {
            let sectionID = new.sectionValues[newSection].id
            let items = new.itemValues[newSection]
            let plan = plans[newSection]
            for newIndex in stride(from: items.count - 1, through: 0, by: -1) {
                let action = plan[newIndex]
                if action == .stay { continue }
                let successor = newIndex + 1 < items.count ? items[newIndex + 1].id : nil
                if action == .insert {
                    operations.append(.insert(items[newIndex], section: sectionID, before: successor))
                } else {
                    operations.append(.move(items[newIndex].id, section: sectionID, before: successor))
                }
            }
        }

        // 6. Section deletes, once every surviving item has left them.
        for oldSection in 0..<oldSectionCount where oldSectionToNew[oldSection] < 0 {
            operations.append(.deleteSection(old.sectionValues[oldSection].id))
        }

        // 7. Content updates.
        for newIndex in 0..<newSectionCount {
            let oldIndex = newSectionToOld[newIndex]
            if oldIndex >= 0, old.sectionValues[oldIndex] != new.sectionValues[newIndex] {
                operations.append(.updateSection(new.sectionValues[newIndex]))
            }
        }
        for item in updatedItems { operations.append(.update(item)) }

        return Batch(operations)
    }
}

/// What the diff does with one item of the new snapshot.
@usableFromInline
enum ItemPlan: UInt8 {
    case stay, insert, move
}
