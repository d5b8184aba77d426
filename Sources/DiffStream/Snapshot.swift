/// The position of an item inside a ``Snapshot``: its section's index and its index in that section.
public struct ItemPosition: Hashable, Sendable {
    public var section: Int
    public var index: Int

    @inlinable public init(section: Int, index: Int) {
        self.section = section
        self.index = index
    }
}

/// An ordered list of sections, each with an ordered list of items: the state of a list screen.
///
/// This is the server-side counterpart of `NSDiffableDataSourceSnapshot`. Sections and items are
/// identified by their `id` (which must be unique across the whole snapshot) and compared by content
/// with `==`, so that ``diff(from:to:)`` can tell moves (same id, other place) from updates (same id,
/// other content).
///
/// Unlike UIKit, a duplicate or unknown identifier never crashes: every mutation that can fail throws a
/// ``SnapshotError`` naming the identifier.
///
/// An index from identifier to position is kept up to date, so look-ups are O(1). Appending is O(1)
/// amortised per element; inserting, deleting or moving in the middle of a section is O(k) in the number
/// of items after the insertion point, as with an array.
public struct Snapshot<SectionType: Identifiable & Equatable, ItemType: Identifiable & Equatable> {
    public typealias SectionID = SectionType.ID
    public typealias ItemID = ItemType.ID

    @usableFromInline internal var sectionValues: [SectionType] = []
    @usableFromInline internal var itemValues: [[ItemType]] = []
    @usableFromInline internal var sectionIndexByID: [SectionID: Int] = [:]
    @usableFromInline internal var itemPositionByID: [ItemID: ItemPosition] = [:]

    /// An empty snapshot.
    public init() {}

    // MARK: Counts and look-ups

    /// The number of sections.
    public var numberOfSections: Int { sectionValues.count }

    /// The number of items in all sections.
    public var numberOfItems: Int { itemPositionByID.count }

    /// The sections, in order.
    public var sections: [SectionType] { sectionValues }

    /// The section identifiers, in order.
    public var sectionIDs: [SectionID] { sectionValues.map(\.id) }

    /// All items of all sections, in order.
    public var items: [ItemType] { Array(itemValues.joined()) }

    /// All item identifiers, in order.
    public var itemIDs: [ItemID] { itemValues.flatMap { $0.map(\.id) } }

    /// The number of items in a section, or `nil` if there is no such section.
    public func numberOfItems(inSection id: SectionID) -> Int? {
        sectionIndexByID[id].map { itemValues[$0].count }
    }

    /// The items of a section, in order, or `nil` if there is no such section.
    public func items(inSection id: SectionID) -> [ItemType]? {
        sectionIndexByID[id].map { itemValues[$0] }
    }

    /// The items of the section at `index`.
    @inlinable public func items(atSectionIndex index: Int) -> [ItemType] { itemValues[index] }

    /// The index of a section. - Complexity: O(1).
    @inlinable public func index(ofSection id: SectionID) -> Int? { sectionIndexByID[id] }

    /// The section with this identifier. - Complexity: O(1).
    public func section(withID id: SectionID) -> SectionType? {
        sectionIndexByID[id].map { sectionValues[$0] }
    }

    /// Where an item is. - Complexity: O(1).
    @inlinable public func position(ofItem id: ItemID) -> ItemPosition? { itemPositionByID[id] }

    /// The index of an item inside its section. - Complexity: O(1).
    public func index(ofItem id: ItemID) -> Int? { itemPositionByID[id]?.index }

    /// The section that holds an item. - Complexity: O(1).
    public func section(containingItem id: ItemID) -> SectionType? {
        itemPositionByID[id].map { sectionValues[$0.section] }
    }

    /// The item with this identifier. - Complexity: O(1).
    public func item(withID id: ItemID) -> ItemType? {
        itemPositionByID[id].map { itemValues[$0.section][$0.index] }
    }

    /// Whether the snapshot holds a section with this identifier.
    public func contains(section id: SectionID) -> Bool { sectionIndexByID[id] != nil }

    /// Whether the snapshot holds an item with this identifier.
    public func contains(item id: ItemID) -> Bool { itemPositionByID[id] != nil }

    // MARK: Sections

    /// Appends sections at the end. Throws if an identifier is already present (nothing is changed then).
    public mutating func appendSections(_ sections: [SectionType]) throws(SnapshotError) {
        try insertSections(sections, at: sectionValues.count)
    }

    /// Inserts sections before an existing section.
    public mutating func insertSections(_ sections: [SectionType], beforeSection id: SectionID) throws(SnapshotError) {
        guard let index = sectionIndexByID[id] else { throw .unknownSection(describe(id)) }
        try insertSections(sections, at: index)
    }

    /// Inserts sections after an existing section.
    public mutating func insertSections(_ sections: [SectionType], afterSection id: SectionID) throws(SnapshotError) {
        guard let index = sectionIndexByID[id] else { throw .unknownSection(describe(id)) }
        try insertSections(sections, at: index + 1)
    }

    /// Deletes sections together with their items.
    public mutating func deleteSections(_ ids: [SectionID]) throws(SnapshotError) {
        for id in ids where sectionIndexByID[id] == nil { throw .unknownSection(describe(id)) }
        let doomed = Set(ids)
        var keptSections: [SectionType] = []
        var keptItems: [[ItemType]] = []
        for (section, items) in zip(sectionValues, itemValues) {
            if doomed.contains(section.id) {
                sectionIndexByID[section.id] = nil
                for item in items { itemPositionByID[item.id] = nil }
            } else {
                keptSections.append(section)
                keptItems.append(items)
            }
        }
        sectionValues = keptSections
        itemValues = keptItems
        reindexSections(from: 0)
    }

    /// Moves a section so that it stands right before another one.
    public mutating func moveSection(_ id: SectionID, beforeSection other: SectionID) throws(SnapshotError) {
        try moveSection(id, toBefore: other)
    }

    /// Moves a section so that it stands right after another one.
    public mutating func moveSection(_ id: SectionID, afterSection other: SectionID) throws(SnapshotError) {
        guard let from = sectionIndexByID[id] else { throw .unknownSection(describe(id)) }
        guard let anchor = sectionIndexByID[other] else { throw .unknownSection(describe(other)) }
        guard from != anchor else { throw .selfAnchor(describe(id)) }
        let target = anchor + 1 < sectionValues.count ? sectionValues[anchor + 1].id : nil
        if target == id { return }
        try moveSection(id, toBefore: target)
    }

    /// Moves a section before `other`, or to the end when `other` is `nil`.
    public mutating func moveSection(_ id: SectionID, toBefore other: SectionID?) throws(SnapshotError) {
        guard let from = sectionIndexByID[id] else { throw .unknownSection(describe(id)) }
        if let other {
            guard sectionIndexByID[other] != nil else { throw .unknownSection(describe(other)) }
            guard other != id else { throw .selfAnchor(describe(id)) }
        }
        let section = sectionValues.remove(at: from)
        let items = itemValues.remove(at: from)
        let to = other.flatMap { sectionIndexByID[$0] }.map { $0 > from ? $0 - 1 : $0 } ?? sectionValues.count
        sectionValues.insert(section, at: to)
        itemValues.insert(items, at: to)
        reindexSections(from: min(from, to))
    }

    /// Replaces a section's content (its identifier stays; its items are kept).
    public mutating func updateSection(_ section: SectionType) throws(SnapshotError) {
        guard let index = sectionIndexByID[section.id] else { throw .unknownSection(describe(section.id)) }
        sectionValues[index] = section
    }

    // MARK: Items

    /// Appends items to a section, by default the last one.
    public mutating func appendItems(_ items: [ItemType], toSection id: SectionID? = nil) throws(SnapshotError) {
        let sectionIndex: Int
        if let id {
            guard let index = sectionIndexByID[id] else { throw .unknownSection(describe(id)) }
            sectionIndex = index
        } else {
            guard !sectionValues.isEmpty else { throw .noSection }
            sectionIndex = sectionValues.count - 1
        }
        try insertItems(items, section: sectionIndex, at: itemValues[sectionIndex].count)
    }

    /// Inserts items right before an existing item, in that item's section.
    public mutating func insertItems(_ items: [ItemType], beforeItem id: ItemID) throws(SnapshotError) {
        guard let position = itemPositionByID[id] else { throw .unknownItem(describe(id)) }
        try insertItems(items, section: position.section, at: position.index)
    }

    /// Inserts items right after an existing item, in that item's section.
    public mutating func insertItems(_ items: [ItemType], afterItem id: ItemID) throws(SnapshotError) {
        guard let position = itemPositionByID[id] else { throw .unknownItem(describe(id)) }
        try insertItems(items, section: position.section, at: position.index + 1)
    }

    /// Inserts one item into a section before `before`, or at the section's end when `before` is `nil`.
    public mutating func insertItem(_ item: ItemType, inSection id: SectionID, before: ItemID?) throws(SnapshotError) {
        guard let sectionIndex = sectionIndexByID[id] else { throw .unknownSection(describe(id)) }
        let index = try anchorIndex(before, inSection: sectionIndex, sectionID: id)
        try insertItems([item], section: sectionIndex, at: index)
    }

    /// Deletes items wherever they are.
    public mutating func deleteItems(_ ids: [ItemID]) throws(SnapshotError) {
        for id in ids where itemPositionByID[id] == nil { throw .unknownItem(describe(id)) }
        var touched = Set<Int>()
        for id in ids {
            if let position = itemPositionByID.removeValue(forKey: id) { touched.insert(position.section) }
        }
        for section in touched {
            itemValues[section].removeAll { itemPositionByID[$0.id] == nil }
            reindexItems(inSection: section, from: 0)
        }
    }

    /// Deletes every item, keeping the sections.
    public mutating func deleteAllItems() {
        itemPositionByID.removeAll()
        for index in itemValues.indices { itemValues[index].removeAll() }
    }

    /// Moves an item right before another item (possibly in another section).
    public mutating func moveItem(_ id: ItemID, beforeItem other: ItemID) throws(SnapshotError) {
        guard let anchor = itemPositionByID[other] else { throw .unknownItem(describe(other)) }
        try moveItem(id, toSection: sectionValues[anchor.section].id, before: other)
    }

    /// Moves an item right after another item (possibly in another section).
    public mutating func moveItem(_ id: ItemID, afterItem other: ItemID) throws(SnapshotError) {
        guard itemPositionByID[id] != nil else { throw .unknownItem(describe(id)) }
        guard let anchor = itemPositionByID[other] else { throw .unknownItem(describe(other)) }
        guard id != other else { throw .selfAnchor(describe(id)) }
        let sectionItems = itemValues[anchor.section]
        let next = anchor.index + 1 < sectionItems.count ? sectionItems[anchor.index + 1].id : nil
        if next == id { return }
        try moveItem(id, toSection: sectionValues[anchor.section].id, before: next)
    }

    /// Moves an item into a section, before `before`, or to the section's end when `before` is `nil`.
    public mutating func moveItem(_ id: ItemID, toSection sectionID: SectionID, before: ItemID?) throws(SnapshotError) {
        guard let from = itemPositionByID[id] else { throw .unknownItem(describe(id)) }
        guard let target = sectionIndexByID[sectionID] else { throw .unknownSection(describe(sectionID)) }
        if before == id { throw .selfAnchor(describe(id)) }
        _ = try anchorIndex(before, inSection: target, sectionID: sectionID)
        let item = itemValues[from.section].remove(at: from.index)
        reindexItems(inSection: from.section, from: from.index)
        let index = try anchorIndex(before, inSection: target, sectionID: sectionID)
        itemValues[target].insert(item, at: index)
        reindexItems(inSection: target, from: index)
    }

    /// Replaces an item's content; its identifier and place stay.
    public mutating func updateItem(_ item: ItemType) throws(SnapshotError) {
        guard let position = itemPositionByID[item.id] else { throw .unknownItem(describe(item.id)) }
        itemValues[position.section][position.index] = item
    }

    // MARK: Internals

    /// Where `before` stands in a section, or the section's end when it is `nil`.
    private func anchorIndex(_ before: ItemID?, inSection index: Int, sectionID: SectionID) throws(SnapshotError) -> Int {
        guard let before else { return itemValues[index].count }
        guard let position = itemPositionByID[before] else { throw .unknownItem(describe(before)) }
        guard position.section == index else { throw .anchorInOtherSection(item: describe(before), section: describe(sectionID)) }
        return position.index
    }

    private mutating func insertSections(_ sections: [SectionType], at index: Int) throws(SnapshotError) {
        var seen = Set<SectionID>()
        for section in sections where sectionIndexByID[section.id] != nil || !seen.insert(section.id).inserted {
            throw .duplicateSection(describe(section.id))
        }
        sectionValues.insert(contentsOf: sections, at: index)
        itemValues.insert(contentsOf: Array(repeating: [], count: sections.count), at: index)
        reindexSections(from: index)
    }

    private mutating func insertItems(_ items: [ItemType], section: Int, at index: Int) throws(SnapshotError) {
        var seen = Set<ItemID>()
        for item in items where itemPositionByID[item.id] != nil || !seen.insert(item.id).inserted {
            throw .duplicateItem(describe(item.id))
        }
        if index == itemValues[section].count {
            // The common case (building a snapshot): no index shifts.
            itemPositionByID.reserveCapacity(itemPositionByID.count + items.count)
            for (offset, item) in items.enumerated() {
                itemPositionByID[item.id] = ItemPosition(section: section, index: index + offset)
            }
            itemValues[section].append(contentsOf: items)
        } else {
            itemValues[section].insert(contentsOf: items, at: index)
            reindexItems(inSection: section, from: index)
        }
    }

    private mutating func reindexSections(from start: Int) {
        for index in start..<sectionValues.count {
            sectionIndexByID[sectionValues[index].id] = index
            reindexItems(inSection: index, from: 0)
        }
    }

    private mutating func reindexItems(inSection section: Int, from start: Int) {
        let items = itemValues[section]
        guard start < items.count else { return }
        for index in start..<items.count {
            itemPositionByID[items[index].id] = ItemPosition(section: section, index: index)
        }
    }

    private func describe<T>(_ value: T) -> String { String(describing: value) }
}

extension Snapshot: Equatable {
    /// Two snapshots are equal when they hold equal sections with equal items in the same order.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.sectionValues == rhs.sectionValues && lhs.itemValues == rhs.itemValues
    }
}

extension Snapshot: Sendable where SectionType: Sendable, ItemType: Sendable, SectionType.ID: Sendable, ItemType.ID: Sendable {}

extension Snapshot: CustomStringConvertible {
    /// A stable text form for tests and logs: one line per section, `section: item item item`.
    public var description: String {
        zip(sectionValues, itemValues).map { section, items in
            let ids = items.map { String(describing: $0.id) }.joined(separator: " ")
            return ids.isEmpty ? "\(section.id):" : "\(section.id): \(ids)"
        }.joined(separator: "\n")
    }
}
