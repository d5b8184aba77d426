// swift-tools-version:6.0
// libFuzzer targets, in their own package so they stay out of the normal build and test run.
//   scripts/fuzz.sh [seconds]      builds them with --sanitize=fuzzer --sanitize=address and runs each
//
// Every folder `Sources/fuzz-<name>/` is one executable target (listed here at manifest time, so adding
// a target never edits this file). Each exports `LLVMFuzzerTestOneInput` and has no `main` of its own
// (`-parse-as-library`): libFuzzer provides it. Seeds live in `Corpus/fuzz-<name>/`.
// `Sources/FuzzSupport` holds what several targets share.
import Foundation
import PackageDescription

let here = URL(fileURLWithPath: Context.packageDirectory)
// SwiftPM names a path dependency after its folder, whatever the checkout is called.
let root = here.deletingLastPathComponent().lastPathComponent
let targetNames = ((try? FileManager.default.contentsOfDirectory(atPath: here.appendingPathComponent("Sources").path)) ?? [])
    .filter { $0.hasPrefix("fuzz-") }
    .sorted()

let rootProducts: [Target.Dependency] = ["DiffStream", "DiffStreamJSON", "HTTPCore", "EpollRuntime", "FeedServer", "FeedStorage", "DiffStreamExamples"].map {
    .product(name: $0, package: root)
}

let package = Package(
    name: "DiffStreamFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "FuzzSupport", dependencies: rootProducts, swiftSettings: [.swiftLanguageMode(.v6)]),
    ] + targetNames.map { name in
        .executableTarget(
            name: name,
            dependencies: rootProducts + ["FuzzSupport"],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])])
    }
)
