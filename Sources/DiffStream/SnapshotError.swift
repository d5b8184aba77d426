/// Why a snapshot could not be built or changed. Each case names the offending identifier (as text), so
/// the message can be shown to whoever sent the data.
public enum SnapshotError: Error, Equatable, Hashable, Sendable {
    /// Two sections share an identifier.
    case duplicateSection(String)
    /// Two items share an identifier (identifiers are unique across all sections).
    case duplicateItem(String)
    /// No section has this identifier.
    case unknownSection(String)
    /// No item has this identifier.
    case unknownItem(String)
    /// Items were appended without naming a section, and there is none.
    case noSection
    /// A section or item was to be placed relative to itself.
    case selfAnchor(String)
    /// An item was to be placed before an item that stands in another section.
    case anchorInOtherSection(item: String, section: String)

    /// A sentence a user can act on.
    public var errorDescription: String? {
        switch self {
        case .duplicateSection(let id): "duplicate section id '\(id)': section ids must be unique"
        case .duplicateItem(let id): "duplicate item id '\(id)': item ids must be unique across all sections"
        case .unknownSection(let id): "unknown section id '\(id)'"
        case .unknownItem(let id): "unknown item id '\(id)'"
        case .noSection: "there is no section to append items to: add a section first"
        case .selfAnchor(let id): "'\(id)' cannot be placed relative to itself"
        case .anchorInOtherSection(let item, let section): "anchor item '\(item)' is not in section '\(section)'"
        }
    }
}

extension SnapshotError: CustomStringConvertible {
    public var description: String { errorDescription ?? "snapshot error" }
}
