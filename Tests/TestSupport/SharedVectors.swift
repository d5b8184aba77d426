import Foundation

/// Where the shared test files beside the checkout are (`../shared/`, see its README).
public enum SharedVectors {
    /// The diff cases: `$DIFFSTREAM_VECTORS`, or `shared/vectors/diff-cases.jsonl` beside the checkout.
    public static let diffCases: URL = {
        if let path = ProcessInfo.processInfo.environment["DIFFSTREAM_VECTORS"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: #filePath)  // <checkout>/Tests/TestSupport/SharedVectors.swift
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/vectors/diff-cases.jsonl")
    }()
}
