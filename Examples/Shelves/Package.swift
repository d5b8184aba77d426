// swift-tools-version:6.0
// A program of one's own that hosts a family of feeds (`shelf.<user>`) with DiffStream, depending on it by path.
import PackageDescription

let package = Package(
    name: "Shelves",
    platforms: [.macOS(.v14)],
    dependencies: [
        // DiffStream, by path: a checkout may have any directory name, so the package is named here.
        .package(name: "DiffStream", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(name: "Shelves", dependencies: [
            .product(name: "DiffStreamServer", package: "DiffStream"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
