import DiffStream

/// The identifiers of a snapshot, as doubly linked lists keyed by id: what ``DiffableTranslation``
/// follows while it walks a batch, to know at each step where a section ends and what comes after
/// an item.
///
/// Inlinable, so that an app's module gets it specialised for its own id types.
///
/// Every change is O(1) (removing a section is O(k) in the items it holds) and checks what
/// ``Snapshot`` checks, throwing the same ``SnapshotError``, so a batch that does not apply to the
/// snapshot is refused here too.
@usableFromInline struct DiffableOutline<SectionID: Hashable, ItemID: Hashable> {
    @usableFromInline struct ItemLink {
        @usableFromInline var section: SectionID
        @usableFromInline var previous: ItemID?
        @usableFromInline var next: ItemID?

        @inlinable init(section: SectionID, previous: ItemID?, next: ItemID?) {
            self.section = section
            self.previous = previous
            self.next = next
        }
    }

    @usableFromInline struct SectionLink {
        @usableFromInline var previous: SectionID?
        @usableFromInline var next: SectionID?
        @usableFromInline var first: ItemID?
        @usableFromInline var last: ItemID?

        @inlinable init(previous: SectionID?, next: SectionID?, first: ItemID?, last: ItemID?) {
            self.previous = previous
            self.next = next
            self.first = first
            self.last = last
        }
    }

    @usableFromInline var items: [ItemID: ItemLink] = [:]
    @usableFromInline var sections: [SectionID: SectionLink] = [:]
    @usableFromInline var lastSection: SectionID?

    /// The outline of a snapshot. - Complexity: O(n) in its sections and items.
    @inlinable init<SectionType, ItemType>(_ snapshot: Snapshot<SectionType, ItemType>) where SectionType.ID == SectionID, ItemType.ID == ItemID {
        items.reserveCapacity(snapshot.numberOfItems)
        sections.reserveCapacity(snapshot.numberOfSections)
        for (index, section) in snapshot.sections.enumerated() {
            linkSection(section.id, before: nil)
            for item in snapshot.items(atSectionIndex: index) { linkItem(item.id, inSection: section.id, before: nil) }
        }
    }

    // MARK: Look-ups, O(1)

    @inlinable func contains(item id: ItemID) -> Bool { items[id] != nil }
    @inlinable func contains(section id: SectionID) -> Bool { sections[id] != nil }
    /// The item right after `id` in its section (`nil` at the end or if there is no such item).
    @inlinable func item(after id: ItemID) -> ItemID? { items[id]?.next }
    /// The section that holds an item.
    @inlinable func section(ofItem id: ItemID) -> SectionID? { items[id]?.section }
    /// The last item of a section (`nil` if it is empty or if there is no such section).
    @inlinable func lastItem(inSection id: SectionID) -> ItemID? { sections[id]?.last }
    /// The section right after `id` (`nil` at the end or if there is no such section).
    @inlinable func section(after id: SectionID) -> SectionID? { sections[id]?.next }

    // MARK: Changes, checked as `Snapshot` checks them

    @inlinable mutating func insertItem(_ id: ItemID, inSection section: SectionID, before anchor: ItemID?) throws(SnapshotError) {
        guard items[id] == nil else { throw .duplicateItem(describe(id)) }
        guard sections[section] != nil else { throw .unknownSection(describe(section)) }
        try checkAnchor(anchor, inSection: section)
        linkItem(id, inSection: section, before: anchor)
    }

    @inlinable mutating func deleteItem(_ id: ItemID) throws(SnapshotError) {
        guard items[id] != nil else { throw .unknownItem(describe(id)) }
        unlinkItem(id)
    }

    @inlinable mutating func moveItem(_ id: ItemID, toSection section: SectionID, before anchor: ItemID?) throws(SnapshotError) {
        guard items[id] != nil else { throw .unknownItem(describe(id)) }
        guard sections[section] != nil else { throw .unknownSection(describe(section)) }
        guard anchor != id else { throw .selfAnchor(describe(id)) }
        try checkAnchor(anchor, inSection: section)
        unlinkItem(id)
        linkItem(id, inSection: section, before: anchor)
    }

    @inlinable mutating func insertSection(_ id: SectionID, before anchor: SectionID?) throws(SnapshotError) {
        guard sections[id] == nil else { throw .duplicateSection(describe(id)) }
        if let anchor, sections[anchor] == nil { throw .unknownSection(describe(anchor)) }
        linkSection(id, before: anchor)
    }

    /// Removes a section with the items it holds. - Complexity: O(k) in those items.
    @inlinable mutating func deleteSection(_ id: SectionID) throws(SnapshotError) {
        guard let link = sections[id] else { throw .unknownSection(describe(id)) }
        var item = link.first
        while let current = item {
            item = items.removeValue(forKey: current)?.next
        }
        sections[id]?.first = nil
        sections[id]?.last = nil
        unlinkSection(id)
    }

    @inlinable mutating func moveSection(_ id: SectionID, before anchor: SectionID?) throws(SnapshotError) {
        guard sections[id] != nil else { throw .unknownSection(describe(id)) }
        if let anchor {
            guard sections[anchor] != nil else { throw .unknownSection(describe(anchor)) }
            guard anchor != id else { throw .selfAnchor(describe(id)) }
        }
        let link = unlinkSection(id)
        linkSection(id, before: anchor, first: link.first, last: link.last)
    }

    // MARK: Links

    @inlinable func checkAnchor(_ anchor: ItemID?, inSection section: SectionID) throws(SnapshotError) {
        guard let anchor else { return }
        guard let link = items[anchor] else { throw .unknownItem(describe(anchor)) }
        guard link.section == section else { throw .anchorInOtherSection(item: describe(anchor), section: describe(section)) }
    }

    /// Links a new item into a section before `anchor` (which is in that section), or at its end.
    @inlinable mutating func linkItem(_ id: ItemID, inSection section: SectionID, before anchor: ItemID?) {
        let previous = anchor.map { items[$0]!.previous } ?? sections[section]!.last
        items[id] = ItemLink(section: section, previous: previous, next: anchor)
        if let previous { items[previous]!.next = id } else { sections[section]!.first = id }
        if let anchor { items[anchor]!.previous = id } else { sections[section]!.last = id }
    }

    @inlinable mutating func unlinkItem(_ id: ItemID) {
        let link = items.removeValue(forKey: id)!
        if let previous = link.previous { items[previous]!.next = link.next } else { sections[link.section]!.first = link.next }
        if let next = link.next { items[next]!.previous = link.previous } else { sections[link.section]!.last = link.previous }
    }

    @inlinable mutating func linkSection(_ id: SectionID, before anchor: SectionID?, first: ItemID? = nil, last: ItemID? = nil) {
        let previous = anchor.map { sections[$0]!.previous } ?? lastSection
        sections[id] = SectionLink(previous: previous, next: anchor, first: first, last: last)
        if let previous { sections[previous]!.next = id }
        if let anchor { sections[anchor]!.previous = id } else { lastSection = id }
    }

    @inlinable @discardableResult
    mutating func unlinkSection(_ id: SectionID) -> SectionLink {
        let link = sections.removeValue(forKey: id)!
        if let previous = link.previous { sections[previous]!.next = link.next }
        if let next = link.next { sections[next]!.previous = link.previous } else { lastSection = link.previous }
        return link
    }

    @inlinable func describe<T>(_ value: T) -> String { String(describing: value) }
}
