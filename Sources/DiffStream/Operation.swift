/// One step of a ``Batch``. Steps are applied in order; every anchor (`before`) names a section or item
/// that exists at that point of the batch, and `nil` means "at the end".
///
/// The vocabulary is the one on the wire: `deleteSection` removes a section with all the items it still
/// holds; `insertSection` inserts an empty section; `move` may cross sections.
public enum Operation<SectionType: Identifiable, ItemType: Identifiable> {
    case deleteSection(SectionType.ID)
    case insertSection(SectionType, before: SectionType.ID?)
    case moveSection(SectionType.ID, before: SectionType.ID?)
    case updateSection(SectionType)
    case delete(ItemType.ID)
    case insert(ItemType, section: SectionType.ID, before: ItemType.ID?)
    case move(ItemType.ID, section: SectionType.ID, before: ItemType.ID?)
    case update(ItemType)

    /// The operation's kind, as named on the wire.
    public var kind: OperationKind {
        switch self {
        case .deleteSection: .deleteSection
        case .insertSection: .insertSection
        case .moveSection: .moveSection
        case .updateSection: .updateSection
        case .delete: .delete
        case .insert: .insert
        case .move: .move
        case .update: .update
        }
    }
}

extension Operation: Equatable where SectionType: Equatable, ItemType: Equatable {}
extension Operation: Sendable where SectionType: Sendable, ItemType: Sendable, SectionType.ID: Sendable, ItemType.ID: Sendable {}

/// The eight kinds of ``Operation``, with their wire names.
public enum OperationKind: String, CaseIterable, Hashable, Sendable {
    case deleteSection, insertSection, moveSection, updateSection, delete, insert, move, update
}

/// How many operations of each kind a batch holds.
public struct OperationCounts: Hashable, Sendable, CustomStringConvertible {
    public private(set) var counts: [OperationKind: Int] = [:]

    public init() {}

    public init(_ counts: [OperationKind: Int]) { self.counts = counts.filter { $0.value != 0 } }

    public subscript(kind: OperationKind) -> Int {
        get { counts[kind, default: 0] }
        set { counts[kind] = newValue == 0 ? nil : newValue }
    }

    /// The total number of operations.
    public var total: Int { counts.values.reduce(0, +) }

    public var description: String {
        OperationKind.allCases.filter { self[$0] > 0 }.map { "\($0.rawValue)=\(self[$0])" }.joined(separator: " ")
    }
}

/// The operations that turn one snapshot into another, in the order they must be applied.
public struct Batch<SectionType: Identifiable, ItemType: Identifiable> {
    public var operations: [Operation<SectionType, ItemType>]

    @inlinable public init(_ operations: [Operation<SectionType, ItemType>] = []) { self.operations = operations }

    /// Whether the batch changes nothing.
    public var isEmpty: Bool { operations.isEmpty }

    /// The number of operations of each kind.
    public var counts: OperationCounts {
        var counts = OperationCounts()
        for operation in operations { counts[operation.kind] += 1 }
        return counts
    }
}

extension Batch: Equatable where SectionType: Equatable, ItemType: Equatable {}
extension Batch: Sendable where SectionType: Sendable, ItemType: Sendable, SectionType.ID: Sendable, ItemType.ID: Sendable {}
