// A stand-in for the UIKit API docs/client-swift.md's week list uses, so that it compiles on Linux
// (where there is no UIKit): the same names and signatures, doing nothing. Not a part of DiffStream.
@_exported import Foundation

public struct NSDiffableDataSourceSnapshot<SectionIdentifierType: Hashable & Sendable, ItemIdentifierType: Hashable & Sendable>: Sendable {
    public init() {}
    public mutating func appendSections(_ identifiers: [SectionIdentifierType]) {}
    public mutating func appendItems(_ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType? = nil) {}
    public mutating func reconfigureItems(_ identifiers: [ItemIdentifierType]) {}
}

@MainActor
open class UITableViewDiffableDataSource<SectionIdentifierType: Hashable & Sendable, ItemIdentifierType: Hashable & Sendable> {
    public init() {}
    open func apply(_ snapshot: NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>, animatingDifferences: Bool = true) {}
}
