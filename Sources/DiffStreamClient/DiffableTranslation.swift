import DiffStream

/// Translates a batch into the calls that bring an `NSDiffableDataSourceSnapshot` of identifiers from
/// one version of a feed to the next. Pure and platform-independent: the calls are values
/// (``DiffableCall``), replayed on Apple platforms by `NSDiffableDataSourceSnapshot.replay(_:)`.
///
/// ```swift
/// let calls = try DiffableTranslation.calls(for: update.operations, from: previous)
/// var ids = dataSource.snapshot()
/// ids.replay(calls)
/// dataSource.apply(ids, animatingDifferences: true)
/// ```
///
/// How each operation of a batch is translated (the diffable snapshot holds ids only):
///
/// | operation | calls |
/// |-----------|-------|
/// | `delete` | `deleteItems` |
/// | `deleteSection` | `deleteSections` (it takes the section's items with it) |
/// | `insertSection` before `s` / at the end | `insertSections(_:beforeSection:)` / `appendSections` |
/// | `moveSection` before `s` | `moveSection(_:beforeSection:)` |
/// | `moveSection` to the end | `moveSection(_:afterSection:)` the last section |
/// | `insert` before `i` / at the end | `insertItems(_:beforeItem:)` / `appendItems(_:toSection:)` |
/// | `move` before `i` | `moveItem(_:beforeItem:)` |
/// | `move` to the end of a section that is not empty | `moveItem(_:afterItem:)` its last item |
/// | `move` into an empty section | `deleteItems` and `appendItems(_:toSection:)` |
/// | `update` | `reconfigureItems` (the cell is kept), or `reloadItems` where `needsNewCell` says so |
/// | `updateSection` | `reloadSections` |
///
/// Deleting and appending again is not a reload: the data source compares the snapshot it shows with
/// the one it is given, by identifier, so the item is still moved with its cell.
///
/// The calls are few:
/// - a move that leaves the item where it is (already at the end, already before its anchor) makes no call;
/// - runs of inserts that form one block (the server's batches insert each item before the one after it)
///   become one `insertItems` or `appendItems`; runs of section inserts likewise; consecutive deletes
///   become one `deleteItems` or `deleteSections`;
/// - the `deleteItems` of a move into an empty section joins an earlier `deleteItems` when the calls in
///   between do not name that item, and a move next to a block just inserted joins that block, so that
///   filling a new section with moved and new items costs one `deleteItems` and one `appendItems`;
/// - content changes are reported once, at the end, in one `reloadSections`, one `reconfigureItems`
///   and one `reloadItems`, and only for what was on both sides and whose content differs (`!=`) from
///   `old`: an item inserted by the batch needs no reconfiguring.
///
/// For a batch from the server (``Snapshot/diff(from:to:)``) there are at most as many calls as
/// operations, plus one.
///
/// The functions are inlinable, so that the app's module specialises them for its own types.
public enum DiffableTranslation {
    /// The calls that turn the identifiers of `old` into those of `old.applying(batch)`, with the
    /// content changes as `reloadSections`, `reconfigureItems` and `reloadItems`.
    ///
    /// - Parameters:
    ///   - batch: the operations from one version to the next, in order (a batch update's operations).
    ///   - old: the snapshot the batch applies to (the previous update's snapshot).
    ///   - needsNewCell: whether a changed item needs a new cell (`reloadItems`) rather than the one it
    ///     has (`reconfigureItems`), given its old and new value: say so when its kind changed and the
    ///     kinds use different cell classes or registrations.
    /// - Throws: ``BatchError`` when the batch does not apply to `old`, naming the operation and what
    ///   was wrong, as ``Snapshot/apply(_:)`` does.
    /// - Complexity: O(n + m) time and memory, n being the number of sections and items of `old` and m
    ///   the number of operations (a `deleteSection` also walks the items it removes).
    @inlinable public static func calls<SectionType, ItemType>(
        for batch: Batch<SectionType, ItemType>,
        from old: Snapshot<SectionType, ItemType>,
        needsNewCell: (_ old: ItemType, _ new: ItemType) -> Bool = { _, _ in false }
    ) throws(BatchError) -> [DiffableCall<SectionType.ID, ItemType.ID>] {
        var translator = DiffableTranslator(old)
        for (index, operation) in batch.operations.enumerated() {
            do {
                try translator.translate(operation)
            } catch {
                throw BatchError(operationIndex: index, kind: operation.kind, reason: error)
            }
        }
        return translator.finish(needsNewCell: needsNewCell)
    }

    /// The calls for a batch given as its operations (a batch update's `operations`), as for a `Batch`.
    ///
    /// - Complexity: O(n + m), as for a batch.
    @inlinable public static func calls<SectionType, ItemType>(
        for operations: [DiffStream.Operation<SectionType, ItemType>],
        from old: Snapshot<SectionType, ItemType>,
        needsNewCell: (_ old: ItemType, _ new: ItemType) -> Bool = { _, _ in false }
    ) throws(BatchError) -> [DiffableCall<SectionType.ID, ItemType.ID>] {
        try calls(for: Batch(operations), from: old, needsNewCell: needsNewCell)
    }

    /// The calls from one snapshot to another, when no batch joins them (after a resync, or a new
    /// history): the translation of ``Snapshot/diff(from:to:)``. Unlike applying a whole new snapshot,
    /// this also reconfigures the items whose content changed, which the data source cannot see in a
    /// snapshot of ids.
    ///
    /// - Complexity: O(n log n) in the sections and items of both snapshots.
    @inlinable public static func calls<SectionType, ItemType>(
        from old: Snapshot<SectionType, ItemType>,
        to new: Snapshot<SectionType, ItemType>,
        needsNewCell: (_ old: ItemType, _ new: ItemType) -> Bool = { _, _ in false }
    ) -> [DiffableCall<SectionType.ID, ItemType.ID>] {
        do {
            return try calls(for: Snapshot.diff(from: old, to: new), from: old, needsNewCell: needsNewCell)
        } catch {
            preconditionFailure("the diff of two snapshots applies to the first: \(error)")
        }
    }

    /// The calls that fill an empty `NSDiffableDataSourceSnapshot` with the ids of `snapshot` (the first
    /// update of a feed): one `appendSections`, then one `appendItems` per section that has items.
    ///
    /// - Complexity: O(n) in the sections and items.
    @inlinable public static func calls<SectionType, ItemType>(
        building snapshot: Snapshot<SectionType, ItemType>
    ) -> [DiffableCall<SectionType.ID, ItemType.ID>] {
        guard snapshot.numberOfSections > 0 else { return [] }
        var calls: [DiffableCall<SectionType.ID, ItemType.ID>] = [.appendSections(snapshot.sectionIDs)]
        for (index, section) in snapshot.sections.enumerated() {
            let items = snapshot.items(atSectionIndex: index)
            if !items.isEmpty { calls.append(.appendItems(items.map(\.id), toSection: section.id)) }
        }
        return calls
    }
}

/// Where a block of new items goes.
@usableFromInline enum ItemPlace<SectionID: Hashable, ItemID: Hashable>: Equatable {
    case end(of: SectionID)
    case before(ItemID)
}

/// Where a block of new sections goes.
@usableFromInline enum SectionPlace<SectionID: Hashable>: Equatable {
    case end
    case before(SectionID)
}

/// A block of ids inserted at one place by one call, still open: later inserts next to it join it at
/// either end. O(1) amortised per id at either end.
@usableFromInline struct OpenBlock<ID, Place> {
    @usableFromInline let place: Place
    @usableFromInline var front: [ID] = []  // reversed: the last one is the block's first id
    @usableFromInline var back: [ID]

    @inlinable init(_ id: ID, at place: Place) {
        self.place = place
        back = [id]
    }

    @inlinable var first: ID { front.last ?? back[0] }
    @inlinable var ids: [ID] { front.reversed() + back }

    @inlinable mutating func prepend(_ id: ID) { front.append(id) }
    @inlinable mutating func append(_ id: ID) { back.append(id) }
}

/// Walks a batch once, following the identifiers in a ``DiffableOutline``, and writes the calls.
@usableFromInline struct DiffableTranslator<SectionType: Identifiable & Equatable, ItemType: Identifiable & Equatable> {
    @usableFromInline typealias SectionID = SectionType.ID
    @usableFromInline typealias ItemID = ItemType.ID
    @usableFromInline typealias Call = DiffableCall<SectionID, ItemID>

    @usableFromInline let old: Snapshot<SectionType, ItemType>
    @usableFromInline var outline: DiffableOutline<SectionID, ItemID>
    /// The calls so far; an open block, when there is one, comes after them.
    @usableFromInline var calls: [Call] = []
    @usableFromInline var itemBlock: OpenBlock<ItemID, ItemPlace<SectionID, ItemID>>?
    @usableFromInline var sectionBlock: OpenBlock<SectionID, SectionPlace<SectionID>>?
    /// The index of the last `deleteItems` call, whose ids are kept in `deletes` until ``finish(needsNewCell:)``
    /// (or the next `deleteItems`). Deleting an item that exists now commutes with every call after it
    /// that does not name the item (section calls name no items, and only item calls create items), so
    /// such a delete joins it instead of making a call of its own.
    @usableFromInline var deleteCall: Int?
    @usableFromInline var deletes: [ItemID] = []
    /// Section deletes in a row, still open: the last call when not `nil`.
    @usableFromInline var sectionDeletes: [SectionID]?
    /// The items named by the calls after `deleteCall`.
    @usableFromInline var namedSinceDelete: Set<ItemID> = []
    /// The latest content of the items and sections of `old` that the batch updated or inserted again.
    @usableFromInline var itemContent: [ItemID: ItemType] = [:]
    @usableFromInline var itemsTouched: [ItemID] = []
    @usableFromInline var sectionContent: [SectionID: SectionType] = [:]
    @usableFromInline var sectionsTouched: [SectionID] = []

    @inlinable init(_ old: Snapshot<SectionType, ItemType>) {
        self.old = old
        outline = DiffableOutline(old)
    }

    @inlinable mutating func translate(_ operation: DiffStream.Operation<SectionType, ItemType>) throws(SnapshotError) {
        switch operation {
        case .delete(let id):
            try outline.deleteItem(id)
            deleteItem(id)

        case .deleteSection(let id):
            try outline.deleteSection(id)
            if sectionDeletes != nil {
                sectionDeletes!.append(id)
            } else {
                flush()
                sectionDeletes = [id]
            }

        case .insertSection(let section, let before):
            try outline.insertSection(section.id, before: before)
            touch(section)
            let place: SectionPlace<SectionID> = before.map { .before($0) } ?? .end
            if sectionBlock?.place == place {
                sectionBlock!.append(section.id)
            } else if let before, sectionBlock?.first == before {
                sectionBlock!.prepend(section.id)
            } else {
                flush()
                sectionBlock = OpenBlock(section.id, at: place)
            }

        case .moveSection(let id, let before):
            let next = outline.section(after: id)
            let last = outline.lastSection
            try outline.moveSection(id, before: before)
            if before == next { return }  // already there (at the end, or right before its anchor)
            if let before {
                push(.moveSectionBefore(id, beforeSection: before))
            } else {
                push(.moveSectionAfter(id, afterSection: last!))  // not `id`: `id` had a successor
            }

        case .updateSection(let section):
            guard outline.contains(section: section.id) else { throw .unknownSection(String(describing: section.id)) }
            touch(section)

        case .insert(let item, let section, let before):
            try outline.insertItem(item.id, inSection: section, before: before)
            touch(item)
            let place: ItemPlace<SectionID, ItemID> = before.map { .before($0) } ?? .end(of: section)
            if itemBlock?.place == place {
                itemBlock!.append(item.id)
            } else if let before, itemBlock?.first == before {
                itemBlock!.prepend(item.id)
            } else {
                openItemBlock(item.id, at: place)
            }
            name(item.id)

        case .move(let id, let section, let before):
            let next = outline.item(after: id)
            let lastOfTarget = outline.lastItem(inSection: section)
            try outline.moveItem(id, toSection: section, before: before)
            if let before {
                if next == before { return }  // already right before its anchor
                if itemBlock?.first == before, canHoistDelete(of: id) {
                    // deleteItems([id]) joins the earlier one; the block gets `id` in front.
                    hoistDelete(of: id)
                    itemBlock!.prepend(id)
                    name(id)
                } else {
                    push(.moveItemBefore(id, beforeItem: before))
                }
            } else if let last = lastOfTarget {
                if last == id { return }  // already at the end
                if itemBlock?.place == .end(of: section), canHoistDelete(of: id) {
                    hoistDelete(of: id)
                    itemBlock!.append(id)
                    name(id)
                } else {
                    push(.moveItemAfter(id, afterItem: last))
                }
            } else {
                // Into an empty section: no move call can name an anchor there.
                deleteItem(id)
                openItemBlock(id, at: .end(of: section))
                name(id)
            }

        case .update(let item):
            guard outline.contains(item: item.id) else { throw .unknownItem(String(describing: item.id)) }
            touch(item)
        }
    }

    /// The calls, with the content changes at the end.
    @inlinable mutating func finish(needsNewCell: (ItemType, ItemType) -> Bool) -> [Call] {
        flush()
        closeDeletes()
        let reloadedSections = sectionsTouched.filter { id in
            outline.contains(section: id) && old.section(withID: id) != sectionContent[id]
        }
        var reconfigured: [ItemID] = []
        var reloaded: [ItemID] = []
        for id in itemsTouched where outline.contains(item: id) {
            guard let before = old.item(withID: id), let after = itemContent[id], before != after else { continue }
            if needsNewCell(before, after) { reloaded.append(id) } else { reconfigured.append(id) }
        }
        if !reloadedSections.isEmpty { calls.append(.reloadSections(reloadedSections)) }
        if !reconfigured.isEmpty { calls.append(.reconfigureItems(reconfigured)) }
        if !reloaded.isEmpty { calls.append(.reloadItems(reloaded)) }
        return calls
    }

    // MARK: Calls

    /// Closes the open block or run of section deletes, if any, into its call.
    @inlinable mutating func flush() {
        if let ids = sectionDeletes {
            calls.append(.deleteSections(ids))
            sectionDeletes = nil
        }
        if let block = itemBlock {
            switch block.place {
            case .end(let section): calls.append(.appendItems(block.ids, toSection: section))
            case .before(let anchor): calls.append(.insertItems(block.ids, beforeItem: anchor))
            }
            itemBlock = nil
        }
        if let block = sectionBlock {
            switch block.place {
            case .end: calls.append(.appendSections(block.ids))
            case .before(let anchor): calls.append(.insertSections(block.ids, beforeSection: anchor))
            }
            sectionBlock = nil
        }
    }

    @inlinable mutating func push(_ call: Call) {
        flush()
        calls.append(call)
        switch call {
        case .moveItemBefore(let id, beforeItem: let anchor), .moveItemAfter(let id, afterItem: let anchor):
            name(id)
            name(anchor)
        default:
            break
        }
    }

    @inlinable mutating func openItemBlock(_ id: ItemID, at place: ItemPlace<SectionID, ItemID>) {
        flush()
        itemBlock = OpenBlock(id, at: place)
        if case .before(let anchor) = place { name(anchor) }
    }

    /// Notes that a call after the last `deleteItems` names `id`.
    @inlinable mutating func name(_ id: ItemID) {
        if deleteCall != nil { namedSinceDelete.insert(id) }
    }

    @inlinable func canHoistDelete(of id: ItemID) -> Bool {
        deleteCall != nil && !namedSinceDelete.contains(id)
    }

    /// Adds `id` to the last `deleteItems` call. Only for an item that exists now and that no call
    /// since has named (``canHoistDelete(of:)``).
    @inlinable mutating func hoistDelete(of id: ItemID) {
        deletes.append(id)
    }

    @inlinable mutating func deleteItem(_ id: ItemID) {
        if canHoistDelete(of: id) {
            hoistDelete(of: id)
        } else {
            closeDeletes()
            push(.deleteItems([]))  // its ids are in `deletes` until it is closed
            deleteCall = calls.count - 1
            deletes = [id]
            namedSinceDelete = []
        }
    }

    /// Writes the ids of the last `deleteItems` call into it.
    @inlinable mutating func closeDeletes() {
        if let index = deleteCall { calls[index] = .deleteItems(deletes) }
    }

    // MARK: Content

    @inlinable mutating func touch(_ item: ItemType) {
        guard old.contains(item: item.id) else { return }
        if itemContent.updateValue(item, forKey: item.id) == nil { itemsTouched.append(item.id) }
    }

    @inlinable mutating func touch(_ section: SectionType) {
        guard old.contains(section: section.id) else { return }
        if sectionContent.updateValue(section, forKey: section.id) == nil { sectionsTouched.append(section.id) }
    }
}
