// swift-tools-version:6.0
// Benchmarks live in their own package so they stay out of the normal build and test run.
//   swift run -c release --package-path Benchmarks diff-bench
//   python3 Benchmarks/ingest.py        (ingest-bench and the PUT-to-batch time against a previous commit)
//   swift run -c release --package-path Benchmarks fanout-bench --port 8080 --pid <server pid>
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its folder, whatever the checkout is called.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "DiffStreamBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "diff-bench",
            dependencies: [.product(name: "DiffStream", package: root), .product(name: "DiffStreamJSON", package: root)],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        // epoll for fanout-bench's read loop.
        .target(name: "CBenchShims"),
        .executableTarget(
            name: "ingest-bench",
            dependencies: [.product(name: "DiffStream", package: root), .product(name: "DiffStreamJSON", package: root)],
            swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "fanout-bench",
            dependencies: [.product(name: "EpollRuntime", package: root), "CBenchShims"],
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
