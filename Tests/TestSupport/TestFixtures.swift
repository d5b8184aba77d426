import Foundation

/// The files the tests read, all inside the checkout under `tests/fixtures/` (see its README). No test
/// reads outside the checkout (tests/structure/test_self_contained.py checks it).
public enum TestFixtures {
    /// `<checkout>/tests/fixtures`, found from this file's own path.
    public static let directory: URL = URL(fileURLWithPath: #filePath)  // <checkout>/Tests/TestSupport/TestFixtures.swift
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("tests/fixtures")

    /// The diff cases: `$DIFFSTREAM_VECTORS` when set (to try another set of cases), else
    /// `tests/fixtures/diff-cases.jsonl`.
    public static let diffCases: URL = {
        if let path = ProcessInfo.processInfo.environment["DIFFSTREAM_VECTORS"] { return URL(fileURLWithPath: path) }
        return directory.appendingPathComponent("diff-cases.jsonl")
    }()

    /// The engine's batch for each diff case (`tests/fixtures/vector-batches.jsonl`).
    public static let vectorBatches: URL = directory.appendingPathComponent("vector-batches.jsonl")
}
