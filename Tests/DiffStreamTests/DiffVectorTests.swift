import DiffStream
import DiffStreamJSON
import Foundation
import Testing
import TestSupport

/// One line of `checks/fixtures/diff-cases.jsonl`.
struct DiffVector: CustomTestStringConvertible, Sendable {
    var name: String
    var old: WireSnapshot
    var new: WireSnapshot
    var minimal: OperationCounts
    var testDescription: String { name }

    /// The vectors file (`TestFixtures.diffCases`).
    static var url: URL { TestFixtures.diffCases }

    static func loadAll() throws -> [DiffVector] {
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let value = try JSONParser.parse(String(line))
            var minimal = OperationCounts()
            for kind in OperationKind.allCases {
                minimal[kind] = Int(value["minimal"]?[kind.rawValue]?.numberValue ?? -1)
            }
            return DiffVector(
                name: value["name"]?.stringValue ?? "?",
                old: try WireCodec.decodeSnapshot(value["old"] ?? .null),
                new: try WireCodec.decodeSnapshot(value["new"] ?? .null),
                minimal: minimal)
        }
    }
}

struct DiffVectorTests {
    @Test func theVectorsFileIsPresentAndComplete() throws {
        let vectors = try DiffVector.loadAll()
        #expect(vectors.count >= 300, "expected the diff cases at \(DiffVector.url.path)")
    }

    @Test(arguments: try DiffVector.loadAll())
    func batchConvergesWithTheMinimalCounts(vector: DiffVector) throws {
        let batch = WireSnapshot.diff(from: vector.old, to: vector.new)
        let applied = try vector.old.applying(batch)
        #expect(applied == vector.new)
        #expect(batch.counts == vector.minimal)
        // The batch survives the trip through its wire form.
        var writer = JSONWriter()
        WireCodec.writeOperations(batch.operations, into: &writer)
        let decoded = try WireCodec.decodeOperations(try JSONParser.parse(writer.bytes))
        #expect(decoded == batch)
    }
}
