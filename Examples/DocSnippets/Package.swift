// swift-tools-version:6.0
// The Swift snippets of README.md, docs/view-models.md and docs/client-swift.md, compiled: each source
// file holds one or more of them verbatim (checks/structure/test_doc_snippets.py checks it, block by
// block, and that every swift block of those documents is here or explicitly skipped), beside the
// support code they take for granted (the app's own types and functions). scripts/test.sh builds it,
// and checks/e2e/test_embedding.py, so a snippet the library no longer compiles fails the tests.
import PackageDescription

let package = Package(
    name: "DocSnippets",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "DiffStream", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // README.md, "A view model in Swift" and "Swift client" (top-level code: main.swift).
        .executableTarget(name: "ReadmeSnippets", dependencies: [
            .product(name: "DiffStream", package: "DiffStream"),
            .product(name: "DiffStreamJSON", package: "DiffStream"),
            .product(name: "DiffStreamClient", package: "DiffStream"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
        // README.md, "Host view models from your own program": the whole program (compiled, not linked).
        .target(name: "ReadmeProgram", dependencies: [
            .product(name: "DiffStreamServer", package: "DiffStream"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
        // docs/view-models.md: the to-do view model, hosting it, and its unit test.
        .target(name: "ViewModelSnippets", dependencies: [
            .product(name: "DiffStreamServer", package: "DiffStream"),
            .product(name: "DiffStreamTesting", package: "DiffStream"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
        // docs/client-swift.md (top-level code: main.swift).
        .executableTarget(name: "ClientSnippets", dependencies: [
            .product(name: "DiffStreamClient", package: "DiffStream"),
            "UIKit",
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
        // The few UIKit types the week list of docs/client-swift.md uses, standing in for UIKit on Linux.
        .target(name: "UIKit", swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
