/// One section of a snapshot as written in the DSL: the section value and its items.
///
/// ```swift
/// let snapshot = try Snapshot {
///     if let banner { Section(HomeSection.banner) { HomeItem.banner(banner) } }
///     Section(HomeSection.suggested) { for m in suggested { HomeItem.media(m) } }
/// }
/// ```
public struct Section<SectionType, ItemType> {
    public var section: SectionType
    public var items: [ItemType]

    /// A section with the items its builder produces (`if`, `if let`, `switch`, `for` all work).
    @inlinable public init(_ section: SectionType, @ItemsBuilder<ItemType> items: () -> [ItemType]) {
        self.section = section
        self.items = items()
    }

    /// A section with the given items (empty by default).
    @inlinable public init(_ section: SectionType, items: [ItemType] = []) {
        self.section = section
        self.items = items
    }
}

extension Section: Sendable where SectionType: Sendable, ItemType: Sendable {}

/// Builds the item list of a ``Section``.
@resultBuilder
public enum ItemsBuilder<ItemType> {
    @inlinable public static func buildExpression(_ item: ItemType) -> [ItemType] { [item] }
    @inlinable public static func buildExpression(_ items: [ItemType]) -> [ItemType] { items }
    @inlinable public static func buildExpression(_ item: ItemType?) -> [ItemType] { item.map { [$0] } ?? [] }
    @inlinable public static func buildBlock(_ parts: [ItemType]...) -> [ItemType] { parts.flatMap { $0 } }
    @inlinable public static func buildOptional(_ part: [ItemType]?) -> [ItemType] { part ?? [] }
    @inlinable public static func buildEither(first part: [ItemType]) -> [ItemType] { part }
    @inlinable public static func buildEither(second part: [ItemType]) -> [ItemType] { part }
    @inlinable public static func buildArray(_ parts: [[ItemType]]) -> [ItemType] { parts.flatMap { $0 } }
    @inlinable public static func buildLimitedAvailability(_ part: [ItemType]) -> [ItemType] { part }
}

/// Builds the section list of a ``Snapshot``.
@resultBuilder
public enum SnapshotBuilder<SectionType, ItemType> {
    public typealias Part = [Section<SectionType, ItemType>]
    @inlinable public static func buildExpression(_ section: Section<SectionType, ItemType>) -> Part { [section] }
    @inlinable public static func buildExpression(_ sections: [Section<SectionType, ItemType>]) -> Part { sections }
    @inlinable public static func buildExpression(_ section: Section<SectionType, ItemType>?) -> Part { section.map { [$0] } ?? [] }
    @inlinable public static func buildBlock(_ parts: Part...) -> Part { parts.flatMap { $0 } }
    @inlinable public static func buildOptional(_ part: Part?) -> Part { part ?? [] }
    @inlinable public static func buildEither(first part: Part) -> Part { part }
    @inlinable public static func buildEither(second part: Part) -> Part { part }
    @inlinable public static func buildArray(_ parts: [Part]) -> Part { parts.flatMap { $0 } }
    @inlinable public static func buildLimitedAvailability(_ part: Part) -> Part { part }
}

extension Snapshot {
    /// Builds a snapshot declaratively. Throws ``SnapshotError`` on a duplicate section or item id.
    ///
    /// - Complexity: O(n) in the number of items.
    @inlinable
    public init(@SnapshotBuilder<SectionType, ItemType> _ content: () throws -> [Section<SectionType, ItemType>]) throws {
        try self.init(sections: content())
    }

    /// This snapshot with the values of `sections`, when they have exactly its section and item ids in
    /// its order (the contents changed, not the shape: the common write); nil otherwise. The result
    /// equals `Snapshot(sections: sections)` and shares this snapshot's id tables, so no id is hashed
    /// and no table is built (the ids are unique: they are this snapshot's).
    /// - Complexity: O(n) id comparisons in the number of sections and items.
    @inlinable
    public func withSameIDs(_ sections: [Section<SectionType, ItemType>]) -> Snapshot? {
        guard sections.count == sectionValues.count else { return nil }
        for index in sections.indices {
            let items = sections[index].items, old = itemValues[index]
            guard sections[index].section.id == sectionValues[index].id, items.count == old.count else { return nil }
            for position in items.indices where items[position].id != old[position].id { return nil }
        }
        var same = self
        same.sectionValues = sections.map(\.section)
        same.itemValues = sections.map(\.items)
        return same
    }

    /// Builds a snapshot from sections with their items. Throws ``SnapshotError`` on a duplicate id
    /// (section ids are checked before item ids).
    ///
    /// Inlinable, so callers get it specialised for their types; each id is hashed once.
    /// - Complexity: O(n) in the number of sections and items.
    @inlinable
    public init(sections: [Section<SectionType, ItemType>]) throws(SnapshotError) {
        self.init()
        var itemCount = 0
        for section in sections { itemCount += section.items.count }
        sectionValues.reserveCapacity(sections.count)
        itemValues.reserveCapacity(sections.count)
        sectionIndexByID.reserveCapacity(sections.count)
        itemPositionByID.reserveCapacity(itemCount)
        for index in sections.indices {
            let id = sections[index].section.id
            if sectionIndexByID.updateValue(index, forKey: id) != nil { throw .duplicateSection(String(describing: id)) }
            sectionValues.append(sections[index].section)
        }
        for sectionIndex in sections.indices {
            let items = sections[sectionIndex].items
            for index in items.indices {
                let id = items[index].id
                if itemPositionByID.updateValue(ItemPosition(section: sectionIndex, index: index), forKey: id) != nil {
                    throw .duplicateItem(String(describing: id))
                }
            }
            itemValues.append(items)
        }
    }
}
