import Foundation

/// The files the tests read, all inside the checkout under `checks/fixtures/` (see its README). No test
/// reads outside the checkout (checks/structure/test_self_contained.py checks it).
public enum TestFixtures {
    /// `<checkout>/checks/fixtures`, found from this file's own path.
    public static let directory: URL = URL(fileURLWithPath: #filePath)  // <checkout>/Tests/TestSupport/TestFixtures.swift
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("checks/fixtures")

    /// The diff cases: `$DIFFSTREAM_VECTORS` when set (to try another set of cases), else
    /// `checks/fixtures/diff-cases.jsonl`.
    public static let diffCases: URL = {
        if let path = ProcessInfo.processInfo.environment["DIFFSTREAM_VECTORS"] { return URL(fileURLWithPath: path) }
        return directory.appendingPathComponent("diff-cases.jsonl")
    }()

    /// The engine's batch for each diff case (`checks/fixtures/vector-batches.jsonl`).
    public static let vectorBatches: URL = directory.appendingPathComponent("vector-batches.jsonl")
}
