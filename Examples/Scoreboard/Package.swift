// swift-tools-version:6.0
// A program of one's own that hosts a view model with DiffStream, depending on it by path.
import PackageDescription

let package = Package(
    name: "Scoreboard",
    platforms: [.macOS(.v14)],
    dependencies: [
        // DiffStream, by path: a checkout may have any directory name, so the package is named here.
        .package(name: "DiffStream", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
    ],
    targets: [
        .executableTarget(name: "Scoreboard", dependencies: [
            .product(name: "DiffStreamServer", package: "DiffStream"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
