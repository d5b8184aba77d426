// Replays ``DiffableCall`` values on the real `NSDiffableDataSourceSnapshot` (UIKit and AppKit).
//
// Not built on Linux. Kept to one line per call so that it is correct by reading: the translation and
// its tests (against a model of these methods' rules) are in DiffableTranslation.swift and the tests.
#if (canImport(UIKit) || canImport(AppKit)) && !os(watchOS) && !os(Linux)
#if canImport(UIKit)
import UIKit
#else
import AppKit
#endif

@available(iOS 15.0, tvOS 15.0, macOS 12.0, macCatalyst 15.0, *)
extension NSDiffableDataSourceSnapshot {
    /// Performs the calls in order (see ``DiffableTranslation``).
    ///
    /// - Complexity: that of the snapshot's own methods, once per call.
    public mutating func replay(_ calls: [DiffableCall<SectionIdentifierType, ItemIdentifierType>]) {
        for call in calls {
            switch call {
            case .appendSections(let ids): appendSections(ids)
            case .insertSections(let ids, let anchor): insertSections(ids, beforeSection: anchor)
            case .deleteSections(let ids): deleteSections(ids)
            case .moveSectionBefore(let id, beforeSection: let anchor): moveSection(id, beforeSection: anchor)
            case .moveSectionAfter(let id, afterSection: let anchor): moveSection(id, afterSection: anchor)
            case .reloadSections(let ids): reloadSections(ids)
            case .appendItems(let ids, let section): appendItems(ids, toSection: section)
            case .insertItems(let ids, let anchor): insertItems(ids, beforeItem: anchor)
            case .deleteItems(let ids): deleteItems(ids)
            case .moveItemBefore(let id, beforeItem: let anchor): moveItem(id, beforeItem: anchor)
            case .moveItemAfter(let id, afterItem: let anchor): moveItem(id, afterItem: anchor)
            case .reconfigureItems(let ids): reconfigureItems(ids)
            case .reloadItems(let ids): reloadItems(ids)
            }
        }
    }
}
#endif
