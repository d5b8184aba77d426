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
    public init(_ section: SectionType, @ItemsBuilder<ItemType> items: () -> [ItemType]) {
        self.section = section
        self.items = items()
    }

    /// A section with the given items (empty by default).
    public init(_ section: SectionType, items: [ItemType] = []) {
        self.section = section
        self.items = items
    }
}

extension Section: Sendable where SectionType: Sendable, ItemType: Sendable {}

/// Builds the item list of a ``Section``.
@resultBuilder
public enum ItemsBuilder<ItemType> {
    public static func buildExpression(_ item: ItemType) -> [ItemType] { [item] }
    public static func buildExpression(_ items: [ItemType]) -> [ItemType] { items }
    public static func buildExpression(_ item: ItemType?) -> [ItemType] { item.map { [$0] } ?? [] }
    public static func buildBlock(_ parts: [ItemType]...) -> [ItemType] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [ItemType]?) -> [ItemType] { part ?? [] }
    public static func buildEither(first part: [ItemType]) -> [ItemType] { part }
    public static func buildEither(second part: [ItemType]) -> [ItemType] { part }
    public static func buildArray(_ parts: [[ItemType]]) -> [ItemType] { parts.flatMap { $0 } }
    public static func buildLimitedAvailability(_ part: [ItemType]) -> [ItemType] { part }
}

/// Builds the section list of a ``Snapshot``.
@resultBuilder
public enum SnapshotBuilder<SectionType, ItemType> {
    public typealias Part = [Section<SectionType, ItemType>]
    public static func buildExpression(_ section: Section<SectionType, ItemType>) -> Part { [section] }
    public static func buildExpression(_ sections: [Section<SectionType, ItemType>]) -> Part { sections }
    public static func buildExpression(_ section: Section<SectionType, ItemType>?) -> Part { section.map { [$0] } ?? [] }
    public static func buildBlock(_ parts: Part...) -> Part { parts.flatMap { $0 } }
    public static func buildOptional(_ part: Part?) -> Part { part ?? [] }
    public static func buildEither(first part: Part) -> Part { part }
    public static func buildEither(second part: Part) -> Part { part }
    public static func buildArray(_ parts: [Part]) -> Part { parts.flatMap { $0 } }
    public static func buildLimitedAvailability(_ part: Part) -> Part { part }
}

extension Snapshot {
    /// Builds a snapshot declaratively. Throws ``SnapshotError`` on a duplicate section or item id.
    ///
    /// - Complexity: O(n) in the number of items.
    public init(@SnapshotBuilder<SectionType, ItemType> _ content: () throws -> [Section<SectionType, ItemType>]) throws {
        try self.init(sections: content())
    }

    /// Builds a snapshot from sections with their items. Throws ``SnapshotError`` on a duplicate id.
    public init(sections: [Section<SectionType, ItemType>]) throws(SnapshotError) {
        self.init()
        try appendSections(sections.map(\.section))
        for (index, section) in sections.enumerated() where !section.items.isEmpty {
            try appendItems(section.items, toSection: sectionValues[index].id)
        }
    }
}
