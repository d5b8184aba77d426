import DiffStream

/// A section as it travels on the wire: an id and an untyped model (`null` when it has none).
public struct WireSection: Identifiable, Equatable, Sendable, Codable {
    public var id: String
    public var model: JSONValue

    public init(id: String, model: JSONValue = .null) {
        self.id = id
        self.model = model
    }
}

/// An item as it travels on the wire: an id, a kind (which template the page uses) and a model.
public struct WireItem: Identifiable, Equatable, Sendable, Codable {
    public var id: String
    public var kind: String
    public var model: JSONValue

    public init(id: String, kind: String, model: JSONValue = .null) {
        self.id = id
        self.kind = kind
        self.model = model
    }
}

/// A snapshot in the wire's generic form.
public typealias WireSnapshot = Snapshot<WireSection, WireItem>
/// A batch in the wire's generic form.
public typealias WireBatch = Batch<WireSection, WireItem>
/// An operation in the wire's generic form.
public typealias WireOperation = Operation<WireSection, WireItem>

/// A typed section that knows its wire form (for view models written with the DSL).
public protocol WireSectionConvertible: Identifiable, Equatable {
    var wireSection: WireSection { get }
}

/// A typed item that knows its wire form.
public protocol WireItemConvertible: Identifiable, Equatable {
    var wireItem: WireItem { get }
}

extension Snapshot where SectionType: WireSectionConvertible, ItemType: WireItemConvertible {
    /// The snapshot in wire form. Throws if two typed ids map to the same wire id.
    public func wireSnapshot() throws(SnapshotError) -> WireSnapshot {
        try WireSnapshot(sections: sections.map { section in
            Section(section.wireSection, items: (items(inSection: section.id) ?? []).map(\.wireItem))
        })
    }
}

/// The rules for ids on the wire.
public enum WireID {
    /// The longest id, in UTF-8 bytes.
    public static let maximumLength = 256

    /// Whether a string is a valid section or item id: not empty, at most 256 UTF-8 bytes.
    public static func isValid(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumLength
    }
}
