extension Snapshot {
    /// The whole snapshot as text, for tests that assert a screen in one string: one line per
    /// section, in order, holding the section and its items in brackets.
    ///
    /// ```
    /// banner: [banner b1 {"title":"This is a banner"}]
    /// recommended {"title":"For you"}: [image m1 {"title":"Sunset"}, video m2 {"title":"Surf"}]
    /// done: []
    /// ```
    ///
    /// Each section and item is written with `String(describing:)`: its `CustomStringConvertible`
    /// description when its type has one (the wire types of `DiffStreamJSON` do), else Swift's
    /// default rendering of the value. Items are separated by `", "` and lines by `"\n"`, with no
    /// trailing newline; an empty snapshot is the empty string. The text depends only on the
    /// snapshot's content and order, so it is stable from run to run as long as the descriptions are
    /// (Swift's default rendering of a `Dictionary` or a `Set` is not: give such types a description).
    ///
    /// Unlike ``description``, which lists identifiers only, this shows every value, so a change to
    /// any model shows in a test's failure.
    /// - Complexity: O(n) in the number of sections and items (plus the length of their descriptions).
    public var debugString: String {
        zip(sectionValues, itemValues).map { section, items in
            "\(String(describing: section)): [\(items.map { String(describing: $0) }.joined(separator: ", "))]"
        }.joined(separator: "\n")
    }
}

extension Batch {
    /// The batch as text, one operation per line in the order they apply, for tests that assert what
    /// a change published:
    ///
    /// ```
    /// insert card c3 {"rank":"7"} into hand at end
    /// updateSection hand {"score":17}
    /// ```
    ///
    /// | operation       | line                                                 |
    /// |-----------------|------------------------------------------------------|
    /// | `deleteSection` | `deleteSection <id>`                                 |
    /// | `insertSection` | `insertSection <section> before <id>` or `at end`    |
    /// | `moveSection`   | `moveSection <id> before <id>` or `to end`           |
    /// | `updateSection` | `updateSection <section>`                            |
    /// | `delete`        | `delete <id>`                                        |
    /// | `insert`        | `insert <item> into <section id> before <id>` or `at end` |
    /// | `move`          | `move <id> to <section id> before <id>` or `at end`  |
    /// | `update`        | `update <item>`                                      |
    ///
    /// Sections, items and identifiers are written with `String(describing:)`, as in
    /// ``Snapshot/debugString``. An empty batch is the empty string.
    /// - Complexity: O(n) in the number of operations (plus the length of their descriptions).
    public var debugString: String {
        operations.map(\.debugString).joined(separator: "\n")
    }
}

extension Operation {
    /// One line of ``Batch/debugString``.
    var debugString: String {
        func place<ID>(_ before: ID?, end: String) -> String {
            before.map { "before \(String(describing: $0))" } ?? end
        }
        switch self {
        case .deleteSection(let id): return "deleteSection \(String(describing: id))"
        case .insertSection(let section, let before): return "insertSection \(String(describing: section)) \(place(before, end: "at end"))"
        case .moveSection(let id, let before): return "moveSection \(String(describing: id)) \(place(before, end: "to end"))"
        case .updateSection(let section): return "updateSection \(String(describing: section))"
        case .delete(let id): return "delete \(String(describing: id))"
        case .insert(let item, let section, let before):
            return "insert \(String(describing: item)) into \(String(describing: section)) \(place(before, end: "at end"))"
        case .move(let id, let section, let before):
            return "move \(String(describing: id)) to \(String(describing: section)) \(place(before, end: "at end"))"
        case .update(let item): return "update \(String(describing: item))"
        }
    }
}
