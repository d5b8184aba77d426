import Testing
import TestSupport
@testable import FeedStorage

/// The log store on a ``SimulatedDisk``, through writes, compactions and crashes two deep: a crash (a
/// `kill -9`, or a power cut), a restart with more writes, then a power cut. Crash points near the
/// risky calls (a new log, a checkpoint's rename, an unlink, the start) are all tried, and at each
/// every way the pending changes may go, torn writes included (a seeded sample where there are more
/// than ``enumerateUpTo``). After every crash the store must load, hold every write it acknowledged
/// and every version it served at a start, and nothing that was never written.
///
/// Compaction runs inline (``LogFeedStore/Compaction/inline``), so a script of writes always makes the
/// same file calls, and a crash point names one moment.
struct PowerCutTests {
    static let directory = "/simulated/data"
    /// Small enough that a few dozen writes start several logs and checkpoints.
    static let compactAfter = 1_500
    static let enumerateUpTo = 256
    static let samples = 48

    /// What a store may hold after a crash: everything acknowledged, plus perhaps the one write in flight.
    struct Expected: CustomStringConvertible {
        var acknowledged: [StoredFeed]
        var withInFlight: [StoredFeed]?
        func allows(_ feeds: [StoredFeed]) -> Bool { feeds == acknowledged || feeds == withInFlight }
        var description: String {
            func show(_ feeds: [StoredFeed]) -> String { feeds.map { "\($0.name)@\($0.version)" }.joined(separator: " ") }
            return "[\(show(acknowledged))]" + (withInFlight.map { " or [\(show($0))]" } ?? "")
        }
    }

    /// A process's life on the disk: start, load, then `count` writes until the first that fails.
    struct Run {
        var loaded: [StoredFeed]?
        var acknowledged: [FeedWrite] = []
        var inFlight: FeedWrite?

        func expected(from base: [StoredFeed]) -> Expected {
            let acknowledged = WriteScript.oracle(self.acknowledged, from: base)
            return Expected(acknowledged: acknowledged, withInFlight: inFlight.map { WriteScript.oracle(self.acknowledged + [$0], from: base) })
        }
    }

    static func open(_ disk: SimulatedDisk) throws(StoreError) -> LogFeedStore {
        try LogFeedStore(directory: directory, files: disk, tuning: .init(compactAfterBytes: compactAfter, preallocationBytes: 1_024, compaction: .inline))
    }

    static func run(_ disk: SimulatedDisk, script: inout WriteScript, writes count: Int) async -> Run {
        var run = Run()
        guard let store = try? open(disk) else { return run }
        defer { store.close() }
        guard let contents = try? store.load() else { return run }
        run.loaded = contents.feeds
        script.resume(from: contents.feeds)
        for _ in 0..<count {
            let write = script.next()
            do {
                try await store.commit(write)
                run.acknowledged.append(write)
            } catch {
                run.inFlight = write
                break
            }
        }
        return run
    }

    /// Loads what the disk holds after a crash, with no further crash.
    static func check(_ disk: SimulatedDisk, _ expected: Expected, _ context: @autoclosure () -> String) -> Bool {
        let store: LogFeedStore
        do { store = try open(disk) } catch {
            Issue.record("\(context()): the store does not open: \(error)")
            return false
        }
        defer { store.close() }
        do {
            let feeds = try store.load().feeds
            guard expected.allows(feeds) else {
                let found = feeds.map { "\($0.name)@\($0.version)" }.joined(separator: " ")
                Issue.record("\(context()): loaded [\(found)], expected \(expected)")
                return false
            }
            return true
        } catch {
            Issue.record("\(context()): the store does not load: \(error)")
            return false
        }
    }

    /// Every way the pending changes may go in a power cut, or a seeded sample of them.
    static func powerCuts(_ disk: SimulatedDisk, seed: UInt64) -> [[Int]] {
        let ways = disk.pendingChanges().map(\.ways)
        let total = ways.reduce(1) { $0 > enumerateUpTo ? $0 : $0 * $1 }
        if total <= enumerateUpTo {
            return (0..<total).map { number in
                var rest = number
                return ways.map { way in defer { rest /= way }; return rest % way }
            }
        }
        var rng = SeededGenerator(seed: seed)
        return [ways.map { _ in 0 }, ways.map { _ in 1 }] + (0..<samples).map { _ in ways.map { Int.random(in: 0..<$0, using: &rng) } }
    }

    /// The crash points of a run's trace worth trying every one of: the start, and a few calls either
    /// side of a new file, a rename and an unlink.
    static func riskyPoints(_ trace: [String], start: Int, around: Int = 3) -> [Int] {
        var points = Set(0..<min(start, trace.count + 1))
        for (index, call) in trace.enumerated() where call.hasPrefix("open+create feeds-") || call.hasPrefix("rename") || call.hasPrefix("unlink") {
            points.formUnion(max(0, index - around)...min(trace.count, index + around))
        }
        return points.sorted()
    }

    /// A `kill -9` at every call of a first run, a restart that writes on, and a power cut near each
    /// risky call of the restart, every way its pending changes may go.
    @Test(arguments: [(31, 18, 10), (32, 30, 6)] as [(UInt64, Int, Int)])
    func aKillThenARestartThenAPowerCutLosesNothingAcknowledgedOrServed(seed: UInt64, first: Int, second: Int) async throws {
        var failures = 0
        var cases = 0
        var clean = WriteScript(seed: seed)
        let probe = SimulatedDisk(directory: Self.directory)
        _ = await Self.run(probe, script: &clean, writes: first)
        #expect(probe.trace.contains { $0.hasPrefix("rename") }, "the first run compacts at least once")
        for kill in 0...probe.calls {
            guard failures < 5 else { break }
            var script = WriteScript(seed: seed)
            let disk = SimulatedDisk(directory: Self.directory)
            disk.crash(atCall: kill)
            let before = await Self.run(disk, script: &script, writes: first)
            disk.kill()
            let afterKill = before.expected(from: [])
            // The restart's calls, to find its risky moments.
            var probeScript = script
            let restartProbe = disk.copy()
            _ = await Self.run(restartProbe, script: &probeScript, writes: second)
            let startCalls = restartProbe.trace.firstIndex { $0.hasPrefix("pwrite feeds-") } ?? restartProbe.calls
            for cut in Self.riskyPoints(restartProbe.trace, start: startCalls + 2) {
                guard failures < 5 else { break }
                var next = script
                let restarted = disk.copy()
                restarted.crash(atCall: cut)
                let after = await Self.run(restarted, script: &next, writes: second)
                let expected: Expected
                if let served = after.loaded {
                    guard afterKill.allows(served) else {
                        failures += 1
                        Issue.record("seed \(seed), kill at \(kill): the restart served \(served.map { "\($0.name)@\($0.version)" }), expected \(afterKill)")
                        continue
                    }
                    expected = after.expected(from: served)
                } else {
                    expected = afterKill
                }
                for (number, choice) in Self.powerCuts(restarted, seed: seed &+ UInt64(kill * 1000 + cut)).enumerated() {
                    cases += 1
                    let disk = restarted.copy()
                    disk.powerCut(choice)
                    if !Self.check(disk, expected, "seed \(seed), kill at call \(kill) (\(probe.trace[safe: kill])), power cut at call \(cut) of the restart (\(restartProbe.trace[safe: cut])), way \(number) \(choice)") {
                        failures += 1
                        break
                    }
                }
            }
        }
        #expect(cases > 1_000, "\(cases) crash states tried")
    }

    /// A power cut during a first run (every call, a sample of the ways), a restart that writes on, and
    /// a second power cut near the restart's start and its risky calls.
    @Test(arguments: [(41, 20, 6)] as [(UInt64, Int, Int)])
    func twoPowerCutsLoseNothingAcknowledgedOrServed(seed: UInt64, first: Int, second: Int) async throws {
        var failures = 0
        var cases = 0
        var clean = WriteScript(seed: seed)
        let probe = SimulatedDisk(directory: Self.directory)
        _ = await Self.run(probe, script: &clean, writes: first)
        for crash in 0...probe.calls {
            guard failures < 5 else { break }
            var script = WriteScript(seed: seed)
            let disk = SimulatedDisk(directory: Self.directory)
            disk.crash(atCall: crash)
            let before = await Self.run(disk, script: &script, writes: first)
            let afterFirst = before.expected(from: [])
            for (number, choice) in Self.powerCuts(disk, seed: seed &+ UInt64(crash)).prefix(6).enumerated() {
                guard failures < 5 else { break }
                let cut = disk.copy()
                cut.powerCut(choice)
                var probeScript = script
                let restartProbe = cut.copy()
                _ = await Self.run(restartProbe, script: &probeScript, writes: second)
                let startCalls = restartProbe.trace.firstIndex { $0.hasPrefix("pwrite feeds-") } ?? restartProbe.calls
                for point in Self.riskyPoints(restartProbe.trace, start: startCalls + 2, around: 1) {
                    var next = script
                    let restarted = cut.copy()
                    restarted.crash(atCall: point)
                    let after = await Self.run(restarted, script: &next, writes: second)
                    let expected: Expected
                    if let served = after.loaded {
                        guard afterFirst.allows(served) else {
                            failures += 1
                            Issue.record("seed \(seed), power cut at \(crash) way \(number): the restart served \(served.map { "\($0.name)@\($0.version)" }), expected \(afterFirst)")
                            break
                        }
                        expected = after.expected(from: served)
                    } else {
                        expected = afterFirst
                    }
                    for choice2 in Self.powerCuts(restarted, seed: seed &+ UInt64(crash * 1000 + point)).prefix(8) {
                        cases += 1
                        let final = restarted.copy()
                        final.powerCut(choice2)
                        if !Self.check(final, expected, "seed \(seed), power cut at call \(crash) way \(choice), then at call \(point) of the restart way \(choice2)") {
                            failures += 1
                            break
                        }
                    }
                }
            }
        }
        #expect(cases > 1_000, "\(cases) crash states tried")
    }
}

extension PowerCutTests {
    /// A sync that fails at start stops the start, naming the call: nothing is served that may not be
    /// on the disk.
    /// `--set-aside-damaged` rewrites what could be read as a new checkpoint and log, then renames the
    /// damaged files aside. A `kill -9` at any call of that start leaves a directory that the next start
    /// with the flag loads to the same feeds and histories, with no damage beyond the first.
    @Test func aKillWhileSettingDamageAsideLeavesTheSameFeeds() async throws {
        var script = WriteScript(seed: 61)
        let disk = SimulatedDisk(directory: Self.directory)
        let run = await Self.run(disk, script: &script, writes: 24)
        #expect(run.acknowledged.count == 24)
        disk.kill()
        // Damage the log: bytes of its first group are overwritten (groups after it are intact).
        let logs = try disk.list(Self.directory).filter { $0.hasSuffix(".log") }.sorted()
        let damaged = Self.directory + "/" + (try #require(logs.last))
        try #require((disk.size(damaged) ?? 0) > LogFormat.headerSize + 400, "a log with several groups")
        let descriptor = try disk.open(damaged, 2 /* O_RDWR */)
        // Inside a record's batch, so the record still says which feed it is for.
        let bytes = try disk.read(damaged), pattern = Array("batch ".utf8)
        let at = try #require((LogFormat.headerSize..<(bytes.count - pattern.count)).first { bytes[$0..<($0 + pattern.count)].elementsEqual(pattern) })
        try disk.write(descriptor, Array("BATCH ".utf8), at: at, path: damaged)
        try disk.sync(descriptor, path: damaged)
        disk.close(descriptor)
        func load(_ disk: SimulatedDisk) throws(StoreError) -> [StoredFeed] {
            let store = try LogFeedStore(directory: Self.directory, setAsideDamaged: true, files: disk,
                                         tuning: .init(compactAfterBytes: Self.compactAfter, preallocationBytes: 1_024, compaction: .inline))
            defer { store.close() }
            return try store.load().feeds
        }
        let probe = disk.copy()
        let expected = try load(probe)
        #expect(try load(disk.copy()) == expected, "the damage names its feeds: the other histories are kept")
        for kill in 0..<probe.calls {
            let crashed = disk.copy()
            crashed.crash(atCall: kill)
            _ = try? load(crashed)
            crashed.kill()
            let feeds: [StoredFeed]
            do { feeds = try load(crashed) } catch {
                Issue.record("a kill at call \(kill) (\(probe.trace[safe: kill])): the next start does not load: \(error)")
                break
            }
            guard feeds == expected else {
                Issue.record("a kill at call \(kill) (\(probe.trace[safe: kill])): loaded \(feeds.map { "\($0.name)@\($0.version) \($0.history)" }), expected \(expected.map { "\($0.name)@\($0.version) \($0.history)" })")
                break
            }
        }
    }

    @Test func aSyncThatFailsAtStartStopsTheStart() async throws {
        var script = WriteScript(seed: 51)
        let disk = SimulatedDisk(directory: Self.directory)
        let run = await Self.run(disk, script: &script, writes: 5)
        #expect(run.acknowledged.count == 5)
        disk.kill()
        let probe = disk.copy()
        _ = await Self.run(probe, script: &script, writes: 0)
        let sync = try #require(probe.trace.firstIndex { $0.hasPrefix("fdatasync") })
        disk.crash(atCall: sync)
        let store = try Self.open(disk)
        defer { store.close() }
        #expect { try store.load() } throws: { error in
            guard case StoreError.directory(let path, let reason) = error else { return false }
            return path.hasSuffix(".log") && reason.contains("fdatasync") && reason.contains("the start stops")
        }
    }
}

extension Array where Element == String {
    subscript(safe index: Int) -> String { indices.contains(index) ? self[index] : "after the last call" }
}
