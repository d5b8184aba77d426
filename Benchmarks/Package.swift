// swift-tools-version:6.0
// Benchmarks live in their own package so they stay out of the normal build and test run.
//   swift run -c release --package-path Benchmarks diff-bench
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
        .executableTarget(
            name: "fanout-bench",
            dependencies: [.product(name: "HTTPServer", package: root)],
            swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
