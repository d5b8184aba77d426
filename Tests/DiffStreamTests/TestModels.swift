import DiffStream

/// A small typed section for tests.
struct TestSection: Identifiable, Equatable, Sendable {
    var id: String
    var title: String = ""
}

/// A small typed item for tests.
struct TestItem: Identifiable, Equatable, Sendable {
    var id: Int
    var text: String = ""
}

typealias TestSnapshot = Snapshot<TestSection, TestItem>

/// Builds a snapshot from a compact description: `["a": [1, 2], "b": [3]]` keeps order via pairs.
func makeSnapshot(_ sections: [(String, [Int])]) throws -> TestSnapshot {
    try TestSnapshot(sections: sections.map { Section(TestSection(id: $0.0), items: $0.1.map { TestItem(id: $0) }) })
}
