// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "DiffStream",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "DiffStream", targets: ["DiffStream"]),
        .library(name: "DiffStreamJSON", targets: ["DiffStreamJSON"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "FeedServer", targets: ["FeedServer"]),
        .executable(name: "diffstream", targets: ["diffstream"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // Snapshots, the result-builder DSL, the diff and `apply`. No HTTP, no Foundation.
        .target(name: "DiffStream", swiftSettings: strict),
        // JSON values, the wire snapshot/operation types and their byte-level codec.
        .target(name: "DiffStreamJSON", dependencies: ["DiffStream"], swiftSettings: strict),
        // System libraries from Debian (libssl-dev, zlib1g-dev).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // epoll and eventfd, which the Glibc module does not export.
        .target(name: "CSystemShims"),
        // Sockets, an epoll event loop, HTTP/1.1, SSE, static files, TLS and gzip. Knows nothing of feeds.
        .target(name: "HTTPServer", dependencies: ["COpenSSL", "CZlib", "CSystemShims"], swiftSettings: strict),
        // Feeds, the HTTP API and the example view models: joins the diff engine and the server.
        .target(name: "FeedServer", dependencies: ["DiffStream", "DiffStreamJSON", "HTTPServer"], swiftSettings: strict),
        // Parses flags and wires the pieces together.
        .executableTarget(
            name: "diffstream",
            dependencies: ["FeedServer", "HTTPServer", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .testTarget(name: "DiffStreamTests", dependencies: ["DiffStream", "DiffStreamJSON"], swiftSettings: strict),
        .testTarget(name: "DiffStreamJSONTests", dependencies: ["DiffStreamJSON"], swiftSettings: strict),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer"], swiftSettings: strict),
        .testTarget(name: "FeedServerTests", dependencies: ["FeedServer"], swiftSettings: strict),
    ]
)
