extension Snapshot {
    /// Applies a batch in order. On error the snapshot is left unchanged and the error names the step.
    ///
    /// - Complexity: O(k) per operation, k being the number of items after its insertion point.
    public mutating func apply(_ batch: Batch<SectionType, ItemType>) throws(BatchError) {
        var copy = self
        for (index, operation) in batch.operations.enumerated() {
            do {
                try copy.apply(operation)
            } catch {
                throw BatchError(operationIndex: index, kind: operation.kind, reason: error)
            }
        }
        self = copy
    }

    /// The snapshot with a batch applied.
    public func applying(_ batch: Batch<SectionType, ItemType>) throws(BatchError) -> Self {
        var copy = self
        try copy.apply(batch)
        return copy
    }

    private mutating func apply(_ operation: Operation<SectionType, ItemType>) throws(SnapshotError) {
        switch operation {
        case .deleteSection(let id):
            try deleteSections([id])
        case .insertSection(let section, let before):
            if let before { try insertSections([section], beforeSection: before) } else { try appendSections([section]) }
        case .moveSection(let id, let before):
            try moveSection(id, toBefore: before)
        case .updateSection(let section):
            try updateSection(section)
        case .delete(let id):
            try deleteItems([id])
        case .insert(let item, let section, let before):
            try insertItem(item, inSection: section, before: before)
        case .move(let id, let section, let before):
            try moveItem(id, toSection: section, before: before)
        case .update(let item):
            try updateItem(item)
        }
    }
}

/// Why a batch could not be applied: which operation, and what was wrong with it.
public struct BatchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The zero-based index of the failing operation in the batch.
    public var operationIndex: Int
    /// The failing operation's kind.
    public var kind: OperationKind
    /// What was wrong.
    public var reason: SnapshotError

    public init(operationIndex: Int, kind: OperationKind, reason: SnapshotError) {
        self.operationIndex = operationIndex
        self.kind = kind
        self.reason = reason
    }

    public var errorDescription: String? {
        "operation \(operationIndex) (\(kind.rawValue)) cannot be applied: \(reason.description)"
    }

    public var description: String { errorDescription ?? "batch error" }
}
