/// One call on an `NSDiffableDataSourceSnapshot`, as a value: what ``DiffableTranslation`` produces from
/// a batch and what `NSDiffableDataSourceSnapshot.replay(_:)` performs on Apple platforms.
///
/// The diffable snapshot holds identifiers only (`Section.ID`, `Item.ID`), as Apple recommends; the app
/// looks its models up by id in the cell provider. Each case has the name and the arguments of the
/// `NSDiffableDataSourceSnapshot` method it stands for, and the same preconditions:
///
/// - an anchor (`beforeItem`, `afterItem`, `beforeSection`, `afterSection`, `toSection`) is in the
///   snapshot when the call is made, and is never the item or section being moved;
/// - an inserted or appended identifier is in the snapshot nowhere yet (item ids are unique across
///   all sections);
/// - a deleted, moved, reloaded or reconfigured identifier is in the snapshot;
/// - `deleteSections` removes the sections together with the items they hold; a new section starts
///   empty and gets its items from `appendItems` or `insertItems`.
public enum DiffableCall<SectionID: Hashable, ItemID: Hashable> {
    /// `appendSections(_:)`: new, empty sections at the end.
    case appendSections([SectionID])
    /// `insertSections(_:beforeSection:)`: new, empty sections right before an existing one.
    case insertSections([SectionID], beforeSection: SectionID)
    /// `deleteSections(_:)`: removes the sections with every item they hold.
    case deleteSections([SectionID])
    /// `moveSection(_:beforeSection:)`.
    case moveSectionBefore(SectionID, beforeSection: SectionID)
    /// `moveSection(_:afterSection:)`: the only way to move a section to the end.
    case moveSectionAfter(SectionID, afterSection: SectionID)
    /// `reloadSections(_:)`: the section's own content (its header, say) changed.
    case reloadSections([SectionID])
    /// `appendItems(_:toSection:)`: new items at the end of a section (the only way into an empty one).
    case appendItems([ItemID], toSection: SectionID)
    /// `insertItems(_:beforeItem:)`: new items right before an existing item, in that item's section.
    case insertItems([ItemID], beforeItem: ItemID)
    /// `deleteItems(_:)`.
    case deleteItems([ItemID])
    /// `moveItem(_:beforeItem:)`: into the anchor's section, right before it.
    case moveItemBefore(ItemID, beforeItem: ItemID)
    /// `moveItem(_:afterItem:)`: into the anchor's section, right after it (how an item reaches the end
    /// of a section that is not empty).
    case moveItemAfter(ItemID, afterItem: ItemID)
    /// `reconfigureItems(_:)`: the items' content changed; their cells are kept and configured again.
    case reconfigureItems([ItemID])
    /// `reloadItems(_:)`: the items changed so much that they need new cells (see
    /// ``DiffableTranslation/calls(for:from:needsNewCell:)``).
    case reloadItems([ItemID])
}

extension DiffableCall: Equatable {}
extension DiffableCall: Hashable {}
extension DiffableCall: Sendable where SectionID: Sendable, ItemID: Sendable {}

extension DiffableCall: CustomStringConvertible {
    /// The call as it would be written in Swift, for test failures and logs:
    /// `moveItem("b", afterItem: "c")`, `appendItems(["x", "y"], toSection: "s")`.
    public var description: String {
        func one<T>(_ value: T) -> String { String(reflecting: value) }
        func list<T>(_ values: [T]) -> String { "[" + values.map(one).joined(separator: ", ") + "]" }
        switch self {
        case .appendSections(let ids): return "appendSections(\(list(ids)))"
        case .insertSections(let ids, let anchor): return "insertSections(\(list(ids)), beforeSection: \(one(anchor)))"
        case .deleteSections(let ids): return "deleteSections(\(list(ids)))"
        case .moveSectionBefore(let id, beforeSection: let anchor): return "moveSection(\(one(id)), beforeSection: \(one(anchor)))"
        case .moveSectionAfter(let id, afterSection: let anchor): return "moveSection(\(one(id)), afterSection: \(one(anchor)))"
        case .reloadSections(let ids): return "reloadSections(\(list(ids)))"
        case .appendItems(let ids, let section): return "appendItems(\(list(ids)), toSection: \(one(section)))"
        case .insertItems(let ids, let anchor): return "insertItems(\(list(ids)), beforeItem: \(one(anchor)))"
        case .deleteItems(let ids): return "deleteItems(\(list(ids)))"
        case .moveItemBefore(let id, beforeItem: let anchor): return "moveItem(\(one(id)), beforeItem: \(one(anchor)))"
        case .moveItemAfter(let id, afterItem: let anchor): return "moveItem(\(one(id)), afterItem: \(one(anchor)))"
        case .reconfigureItems(let ids): return "reconfigureItems(\(list(ids)))"
        case .reloadItems(let ids): return "reloadItems(\(list(ids)))"
        }
    }
}
