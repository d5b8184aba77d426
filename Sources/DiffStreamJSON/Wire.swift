import DiffStream

/// A section as it travels on the wire: an id and a model kept as canonical JSON (`null` when it has none).
///
/// Equality is exact: ids by their bytes, models by their canonical bytes (see ``JSONModel``).
public struct WireSection: Identifiable, Equatable, Sendable, Codable {
    public var id: WireID
    public var model: JSONModel

    /// A section whose model is built as a ``JSONValue`` (view models); the value is canonicalised once.
    public init(id: String, model: JSONValue = .null) {
        self.id = WireID(id)
        self.model = JSONModel(model)
    }

    /// A section with a model that is already canonical JSON.
    public init(id: WireID, model: JSONModel) {
        self.id = id
        self.model = model
    }

    @inlinable public static func == (lhs: WireSection, rhs: WireSection) -> Bool {
        lhs.model == rhs.model && lhs.id == rhs.id
    }
}

/// An item as it travels on the wire: an id, a kind (which template the page uses) and a model kept as
/// canonical JSON.
///
/// Equality is exact: id and kind by their bytes, the model by its canonical bytes.
public struct WireItem: Identifiable, Equatable, Sendable, Codable {
    public var id: WireID
    public var kind: String
    public var model: JSONModel

    /// An item whose model is built as a ``JSONValue`` (view models); the value is canonicalised once.
    public init(id: String, kind: String, model: JSONValue = .null) {
        self.id = WireID(id)
        self.kind = kind
        self.model = JSONModel(model)
    }

    /// An item with a model that is already canonical JSON.
    public init(id: WireID, kind: String, model: JSONModel) {
        self.id = id
        self.kind = kind
        self.model = model
    }

    @inlinable public static func == (lhs: WireItem, rhs: WireItem) -> Bool {
        lhs.model == rhs.model && lhs.id == rhs.id && ExactString.equal(lhs.kind, rhs.kind)
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
    /// - Complexity: O(n) in the number of items.
    @inlinable
    public func wireSnapshot() throws(SnapshotError) -> WireSnapshot {
        // Closures, not key paths (`\.wireItem`): in generic code a key path is made anew at each call.
        let sections = self.sections
        return try WireSnapshot(sections: sections.indices.map { index in
            Section(sections[index].wireSection, items: items(atSectionIndex: index).map { $0.wireItem })
        })
    }
}

extension WireSection: CustomStringConvertible {
    /// `id` followed by the model as canonical JSON, if it has one: `todo {"title":"To do"}`.
    /// A line of ``DiffStream/Snapshot/debugString`` starts with it.
    public var description: String {
        model.isNull ? id.description : "\(id) \(model)"
    }
}

extension WireItem: CustomStringConvertible {
    /// `kind id` followed by the model as canonical JSON, if it has one:
    /// `todo t1 {"done":false,"title":"milk"}`. ``DiffStream/Snapshot/debugString`` lists items so.
    public var description: String {
        model.isNull ? "\(kind) \(id)" : "\(kind) \(id) \(model)"
    }
}
