import DiffStream
import DiffStreamJSON
import Foundation
import Testing
import TestSupport

/// The batches the engine makes for every case of `checks/fixtures/diff-cases.jsonl`, committed as
/// `checks/fixtures/vector-batches.jsonl` for the page's protocol module (its Node tests apply them;
/// see checks/fixtures/README.md). One line per case, in the vectors' order:
/// `{"name":"…","ops":[…]}` with the ops in their wire form.
///
/// This test checks that the committed file is what the engine produces now; with
/// `DIFFSTREAM_WRITE_FIXTURES=1` it writes the file instead:
///
///     DIFFSTREAM_WRITE_FIXTURES=1 swift test --filter VectorBatchFixtureTests
struct VectorBatchFixtureTests {
    static let fixture: URL = TestFixtures.vectorBatches

    /// The fixture's text: one line per vector, each ending with a newline.
    static func render(_ vectors: [DiffVector]) -> String {
        var text = ""
        for vector in vectors {
            let batch = WireSnapshot.diff(from: vector.old, to: vector.new)
            var writer = JSONWriter()
            writer.raw("{\"name\":")
            writer.write(vector.name)
            writer.raw(",\"ops\":")
            WireCodec.writeOperations(batch.operations, into: &writer)
            writer.raw("}")
            text += String(decoding: writer.bytes, as: UTF8.self) + "\n"
        }
        return text
    }

    @Test func theCommittedBatchesAreTheEnginesBatches() throws {
        let expected = Self.render(try DiffVector.loadAll())
        if ProcessInfo.processInfo.environment["DIFFSTREAM_WRITE_FIXTURES"] == "1" {
            try expected.write(to: Self.fixture, atomically: true, encoding: .utf8)
            return
        }
        let committed = try String(contentsOf: Self.fixture, encoding: .utf8)
        guard committed != expected else { return }
        let (old, new) = (committed.split(separator: "\n"), expected.split(separator: "\n"))
        let line = (zip(old, new).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(old.count, new.count)) + 1
        Issue.record("checks/fixtures/vector-batches.jsonl is not what the engine makes now (first difference on line \(line)): regenerate it with DIFFSTREAM_WRITE_FIXTURES=1 swift test --filter VectorBatchFixtureTests")
    }
}
