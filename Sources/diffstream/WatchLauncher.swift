import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `diffstream watch …` runs `diffstream-watch` in this process's place (`execv`: the same process id,
/// standard streams and exit status), found beside this binary or else on `PATH`. `watch` is a program of
/// its own so that the server does not link the client's HTTP stack (FoundationNetworking, libcurl and
/// its libraries: 4 MB of resident memory at start; docs/benchmarks.md). `swift build` builds both into
/// one folder; `swift build --product diffstream` alone does not build it.
struct WatchLauncher: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follows feeds of a server: a live view, or one line of JSON per snapshot (diffstream watch --help).")

    /// The server command's `--token`, given before `watch`: passed on as `DIFFSTREAM_WATCH_TOKEN`.
    @ParentCommand var server: DiffStreamCommand
    @Argument(parsing: .captureForPassthrough, help: "What diffstream-watch takes: URL FEED… and its options.") var arguments: [String] = []

    func run() {
        guard let program = Self.program() else {
            FileHandle.standardError.write(Data("""
                diffstream watch: the program diffstream-watch is neither beside \(Self.executableDirectory() ?? "this binary") nor on PATH; \
                build it with 'swift build --product diffstream-watch' (plain 'swift build' builds both) and keep the two together\n
                """.utf8))
            Foundation.exit(2)
        }
        if let token = server.token { setenv("DIFFSTREAM_WATCH_TOKEN", token, 1) }
        let argv = ["diffstream watch"] + arguments
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        execv(program, &cArguments)
        let reason = String(cString: strerror(errno))
        FileHandle.standardError.write(Data("diffstream watch: execv \(program): \(reason)\n".utf8))
        Foundation.exit(2)
    }

    /// `diffstream-watch` beside this binary, else the first on `PATH`.
    static func program() -> String? {
        let manager = FileManager.default
        if let directory = executableDirectory() {
            let beside = directory + "/diffstream-watch"
            if manager.isExecutableFile(atPath: beside) { return beside }
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map { "\($0)/diffstream-watch" }.first { manager.isExecutableFile(atPath: $0) }
    }

    /// The folder of this process's binary (`/proc/self/exe`, links resolved).
    static func executableDirectory() -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return (target as NSString).deletingLastPathComponent
    }
}
