// swift-tools-version:6.0
// Benchmarks live in their own package so they stay out of the normal build and test run.
//   swift run -c release --package-path Benchmarks diff-bench
//   python3 Benchmarks/ingest.py        (ingest-bench and the PUT-to-batch time against a previous commit)
//   swift run -c release --package-path Benchmarks fanout-bench --port 8080 --pid <server pid>
//   swift build -c release --package-path Benchmarks --product action-host   (Benchmarks/write-peers.sh's action16)
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its folder, whatever the checkout is called.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "DiffStreamBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: ".."), .package(url: "https://github.com/apple/swift-log", from: "1.16.2")],
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
        // The todo example hosted as a family (todo.<key>): actions on many feeds (write-peers.sh's action16).
        .executableTarget(
            name: "action-host",
            dependencies: [.product(name: "DiffStreamServer", package: root), .product(name: "DiffStreamExamples", package: root),
                           .product(name: "LogLines", package: root), .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
