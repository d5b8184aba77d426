import Foundation
import Testing
import TestSupport
@testable import FeedStorage

/// Writes as a feed makes them, for the store tests: versions in order, a window cut back in steps,
/// deletes and re-creations under a new history, view states.
struct WriteScript {
    var rng: SeededGenerator
    var versions: [String: (history: String, version: Int)] = [:]
    var snapshots: [String: [UInt8]] = [:]
    let names = ["a", "b", "c", "d"]

    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    mutating func next() -> FeedWrite {
        let name = names.randomElement(using: &rng)!
        let roll = Int.random(in: 0..<20, using: &rng)
        if roll == 0, versions[name] != nil {
            versions[name] = nil
            return .delete(name: name)
        }
        if roll == 1 { return .viewState(name: name, bytes: Array("state \(Int.random(in: 0..<99, using: &rng))".utf8)) }
        let (history, version) = versions[name].map { ($0.history, $0.version + 1) } ?? (RandomID.history(), 1)
        versions[name] = (history, version)
        var snapshot = snapshots[name] ?? (0..<Int.random(in: 200...400, using: &rng)).map { _ in UInt8.random(in: 97...122, using: &rng) }
        let at = Int.random(in: 0..<snapshot.count, using: &rng)
        snapshot[at] = UInt8.random(in: 65...90, using: &rng)
        if roll == 2 { snapshot = Array(snapshot.reversed()) }  // a big change: stored whole
        snapshots[name] = snapshot
        let limit = 8
        return .put(name: name, history: history, version: version, snapshot: snapshot,
                    batch: version > 1 ? StoredBatch(version: version, bytes: Array("batch \(version)".utf8)) : nil,
                    keepFrom: version - limit - (version % (limit / 4)) + 1, viewState: roll == 3 ? Array("put state".utf8) : nil)
    }

    /// Goes on from what a store holds: the next writes continue these feeds.
    mutating func resume(from feeds: [StoredFeed]) {
        versions = Dictionary(uniqueKeysWithValues: feeds.map { ($0.name, ($0.history, $0.version)) })
        snapshots = Dictionary(uniqueKeysWithValues: feeds.map { ($0.name, $0.snapshot) })
    }

    /// The oracle: what a store holds after `writes`, applied as the seam defines them to `base`.
    static func oracle(_ writes: [FeedWrite], from base: [StoredFeed] = []) -> [StoredFeed] {
        var feeds = Dictionary(uniqueKeysWithValues: base.map { ($0.name, $0) })
        for write in writes {
            switch write {
            case .put(let name, let history, let version, let snapshot, let batch, let keepFrom, let viewState):
                var feed = feeds[name] ?? StoredFeed(name: name, history: history, version: version, snapshot: [], batches: [], viewState: nil)
                if let batch { feed.batches = (feed.batches + [batch]).filter { $0.version >= keepFrom } } else { feed.batches = [] }
                feed.history = history
                feed.version = version
                feed.snapshot = snapshot
                if let viewState { feed.viewState = viewState }
                feeds[name] = feed
            case .viewState(let name, let bytes):
                feeds[name]?.viewState = bytes
            case .delete(let name):
                feeds[name] = nil
            }
        }
        return feeds.keys.sorted().compactMap { feeds[$0] }
    }
}

struct StoreStateTests {
    /// Records made from the state, applied in memory and replayed from their bytes, against the oracle.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func recordsReplayToWhatTheWritesDescribe(seed: UInt64) throws {
        var script = WriteScript(seed: seed)
        var state = StoreState()
        var log = LogFormat.header(kind: .log, generation: 1)
        var writes: [FeedWrite] = []
        var deltas = 0
        for _ in 0..<600 {
            let write = script.next()
            writes.append(write)
            let record = state.record(for: write)
            if case .put(let put) = record, case .delta = put.snapshot { deltas += 1 }
            try state.apply(record)
            var group = LogFormat.GroupEncoder()
            group.append(record)
            log += group.finish(at: log.count, generation: 1)
        }
        let expected = WriteScript.oracle(writes)
        #expect(state.storedFeeds == expected)
        #expect(deltas > 100, "small changes are stored as deltas")
        var replayed = StoreState()
        for entry in try LogFormat.scan(log, kind: .log).entries {
            guard case .record(let record) = entry else { Issue.record("damage in an intact log"); return }
            try replayed.apply(record)
        }
        #expect(replayed.storedFeeds == expected)
        #expect(replayed.liveBytes == expected.reduce(0) { $0 + $1.snapshot.count + $1.batches.reduce(0) { $0 + $1.bytes.count } + ($1.viewState?.count ?? 0) })
    }

    @Test func aDeltaWithoutItsVersionIsBroken() throws {
        var state = StoreState()
        let delta = StoreRecord.put(.init(name: "f", history: "00000000000000aa", version: 5, snapshot: .delta(SnapshotDelta(prefix: 0, suffix: 0, middle: [1])),
                                          batch: nil, keepFrom: 6, viewState: nil))
        #expect(throws: StoreState.Broken.self) { try state.apply(delta) }
    }
}

/// The log store against its seam, without sockets: a temporary directory per test.
struct LogFeedStoreTests {
    let directory = NSTemporaryDirectory() + "diffstream-log-tests-" + UUID().uuidString

    func open(setAside: Bool = false) throws -> (LogFeedStore, StoreContents) {
        let store = try LogFeedStore(directory: directory, setAsideDamaged: setAside)
        return (store, try store.load())
    }

    func files(_ suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(suffix) }.sorted()
    }

    func put(_ store: some FeedStore, _ name: String, version: Int, keep: Int = 100, snapshot: String? = nil) async throws {
        try await store.commit(.put(name: name, history: "00000000000000aa", version: version, snapshot: Array((snapshot ?? "snapshot \(version)").utf8),
                                    batch: version > 1 ? StoredBatch(version: version, bytes: Array("batch \(version)".utf8)) : nil,
                                    keepFrom: version - keep + 1, viewState: nil))
    }

    @Test(arguments: [21, 22] as [UInt64])
    func whatWasCommittedComesBackAfterAReopen(seed: UInt64) async throws {
        var script = WriteScript(seed: seed)
        var writes: [FeedWrite] = []
        for round in 0..<3 {
            let (store, contents) = try open()
            #expect(contents.feeds == WriteScript.oracle(writes), "round \(round)")
            for _ in 0..<150 {
                let write = script.next()
                try await store.commit(write)
                writes.append(write)
            }
            store.close()
        }
        let (store, contents) = try open()
        defer { store.close() }
        #expect(contents.feeds == WriteScript.oracle(writes) && contents.notes.isEmpty)
    }

    @Test func concurrentWritesShareCommits() async throws {
        let (store, _) = try open()
        defer { store.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 { group.addTask { try await self.put(store, "feed-\(index)", version: 1) } }
            try await group.waitForAll()
        }
        let metrics = store.metrics()
        #expect(metrics.writes == 64 && metrics.commits < 64 && metrics.maxWritesPerCommit > 1 && metrics.sizeBytes > 0)
    }

    /// Many puts: the log is compacted into checkpoints, old files go, and the size stays a small
    /// multiple of the live data; a reopen reads the newest checkpoint and the log after it.
    @Test func aLongWriteStormIsCompactedAndStaysBounded() async throws {
        let (store, _) = try open()
        let big = String(repeating: "x", count: 20_000)
        for version in 1...400 {
            // Each put changes the start of the snapshot and its end: no small delta, 20 kB a put.
            try await put(store, "f", version: version, keep: 8, snapshot: "\(version) \(big) \(version)")
        }
        let metrics = store.metrics()
        #expect(metrics.compactions + 1 >= 2 && metrics.sizeBytes > 0, "\(metrics)")  // the last may still be running
        store.close()  // waits for a compaction under way
        #expect(store.metrics().compactions >= 2)
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: directory).reduce(0) { total, name in
            total + ((try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? Int) ?? 0)
        }
        #expect(onDisk <= 3 * 20_100 + LogFeedStore.minimumLogBytes + LogFeedStore.preallocationBytes + 40_000, "\(onDisk) bytes for 8 MB written")
        #expect(try files(".checkpoint").count == 1 && files(".log").count == 1)
        let (reopened, contents) = try open()
        defer { reopened.close() }
        #expect(contents.feeds.first?.version == 400 && contents.feeds.first?.snapshot == Array("400 \(big) 400".utf8))
        #expect(contents.feeds.first?.batches.map(\.version).last == 400)
    }

    /// A log of format 1 (group headers without their place) is read, and not appended to: the writes go
    /// on in the next log, of format 2, and both read back.
    @Test func aLogOfFormat1IsReadAndTheWritesGoOnInANewLog() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var bytes = LogFormat.header(kind: .log, generation: 1, version: 1)
        var group = LogFormat.GroupEncoder()
        group.append(.put(.init(name: "old", history: "00000000000000aa", version: 1, snapshot: .full(Array("snapshot 1".utf8)),
                                batch: nil, keepFrom: 2, viewState: nil)))
        bytes += group.finish(at: bytes.count, generation: 1, version: 1)
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + LogFeedStore.fileName(1, .log)))
        let (store, contents) = try open()
        #expect(contents.feeds.map(\.name) == ["old"] && contents.feeds.first?.snapshot == Array("snapshot 1".utf8))
        try await put(store, "old", version: 2)
        store.close()
        #expect(try files(".log") == [LogFeedStore.fileName(1, .log), LogFeedStore.fileName(2, .log)])
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: directory + "/" + LogFeedStore.fileName(1, .log)))) == bytes, "format 1 left as it was")
        let newLog = try Array(Data(contentsOf: URL(fileURLWithPath: directory + "/" + LogFeedStore.fileName(2, .log))))
        #expect(try LogFormat.readHeader(newLog, kind: .log).version == LogFormat.formatVersion)
        let (again, later) = try open()
        defer { again.close() }
        #expect(later.feeds.first?.version == 2 && later.feeds.first?.snapshot == Array("snapshot 2".utf8) && later.notes.isEmpty)
    }

    @Test func aTornTailIsCutOffAndNothingCommittedIsLost() async throws {
        let (store, _) = try open()
        for version in 1...6 { try await put(store, "f", version: version) }
        store.close()
        let log = directory + "/" + (try files(".log")).last!
        // A write cut short lands where the next group goes: after the last group, in the zeros the log
        // has preallocated (it may run past them).
        var bytes = try #require(FileManager.default.contents(atPath: log))
        let end = try LogFormat.scan([UInt8](bytes), kind: .log).end
        #expect(bytes.count > end && bytes[end...].allSatisfy { $0 == 0 }, "the log has free space after its groups")
        bytes.replaceSubrange(end..<min(bytes.count, end + 3000), with: Data(repeating: 0xA7, count: 3000))
        try bytes.write(to: URL(fileURLWithPath: log))
        let (reopened, contents) = try open()
        #expect(contents.feeds.first?.version == 6 && contents.feeds.first?.batches.count == 5)
        #expect(contents.notes.contains { $0.contains("dropped 3000 bytes") })
        try await put(reopened, "f", version: 7)
        reopened.close()
        let (again, later) = try open()
        defer { again.close() }
        #expect(later.feeds.first?.version == 7 && later.notes.isEmpty)
    }

    @Test func corruptBytesInTheMiddleStopTheLoadUnlessSetAside() async throws {
        let (store, _) = try open()
        try await put(store, "bad", version: 1, snapshot: "marker-0123456789")
        try await put(store, "good", version: 1)
        store.close()
        let log = directory + "/" + (try files(".log")).last!
        var bytes = try #require(FileManager.default.contents(atPath: log))
        let at = try #require(bytes.firstRange(of: Data("marker-0123456789".utf8)))
        bytes[at.lowerBound] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: log))
        let refused = try LogFeedStore(directory: directory)
        let error = #expect(throws: StoreError.self) { try refused.load() }
        refused.close()
        guard case .damaged(let path, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(path == log && reason.contains("'bad'") && reason.contains("--set-aside-damaged"))
        let (kept, contents) = try open(setAside: true)
        #expect(contents.feeds.map(\.name) == ["good"] && contents.setAside.map(\.name) == ["bad"])
        kept.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).contains { $0.contains(".damaged-") })
        let (later, again) = try open()
        defer { later.close() }
        #expect(again.feeds.map(\.name) == ["good"] && again.setAside.isEmpty, "set aside once, for good")
    }

    @Test func damageThatHidesItsFeedsStartsNewHistoriesWhenSetAside() async throws {
        let (store, _) = try open()
        for version in 1...3 { try await put(store, "f", version: version) }
        try await put(store, "g", version: 1)
        store.close()
        let log = directory + "/" + (try files(".log")).last!
        var bytes = try #require(FileManager.default.contents(atPath: log))
        bytes[LogFormat.headerSize + 4] ^= 0x01  // the first group's length
        try bytes.write(to: URL(fileURLWithPath: log))
        let (kept, contents) = try open(setAside: true)
        defer { kept.close() }
        #expect(contents.setAside.map(\.name) == ["*"])
        #expect(contents.feeds.map(\.name) == ["f", "g"] && contents.feeds.allSatisfy { $0.history != "00000000000000aa" && $0.batches.isEmpty })
    }

    @Test func aSecondStoreOnTheDirectoryIsRefusedUntilTheFirstCloses() throws {
        let (store, _) = try open()
        #expect(throws: StoreError.locked(path: directory)) { try LogFeedStore(directory: directory) }
        store.close()
        let (again, _) = try open()
        again.close()
    }

    @Test func aMissingLogIsDamage() async throws {
        let (store, _) = try open()
        try await put(store, "f", version: 1)
        store.close()
        try FileManager.default.removeItem(atPath: directory + "/" + LogFeedStore.fileName(1, .log))
        #expect(FileManager.default.createFile(atPath: directory + "/" + LogFeedStore.fileName(2, .log), contents: Data(LogFormat.header(kind: .log, generation: 2))))
        let refused = try LogFeedStore(directory: directory)
        defer { refused.close() }
        #expect { try refused.load() } throws: { "\($0)".contains("missing") }
    }

    @Test func aDatabaseOfTheSQLiteStoreIsMigrated() throws {
        let old = StoredFeed(name: "kept", history: "00000000000000aa", version: 4, snapshot: Array("snapshot 4".utf8),
                             batches: (2...4).map { StoredBatch(version: $0, bytes: Array("batch \($0)".utf8)) }, viewState: Array("state".utf8))
        try SQLiteMigratorTests.writeDatabase(in: directory, [old])
        let (store, contents) = try open()
        #expect(contents.feeds == [old])
        #expect(contents.notes.contains { $0.contains("migrated 1 feeds") })
        store.close()
        #expect(try !FileManager.default.contentsOfDirectory(atPath: directory).contains(SQLiteMigrator.fileName))
        let (again, later) = try open()
        defer { again.close() }
        #expect(later.feeds == contents.feeds && later.notes.isEmpty)
    }

    /// A crash during a migration leaves the database beside what the migration wrote of generation 1
    /// (an empty log; the log and its checkpoint): the next start migrates again, to the same feeds.
    @Test(arguments: ["log", "log and checkpoint"])
    func aMigrationCutShortIsDoneAgain(written: String) throws {
        let old = StoredFeed(name: "kept", history: "00000000000000aa", version: 4, snapshot: Array("snapshot 4".utf8),
                             batches: (2...4).map { StoredBatch(version: $0, bytes: Array("batch \($0)".utf8)) }, viewState: nil)
        try SQLiteMigratorTests.writeDatabase(in: directory, [old])
        let (store, _) = try open()
        store.close()
        // Undo what the crash would have kept from happening: the rename aside (and the checkpoint).
        let migrated = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasPrefix(SQLiteMigrator.fileName + ".migrated-") })
        try FileManager.default.moveItem(atPath: directory + "/" + migrated, toPath: directory + "/" + SQLiteMigrator.fileName)
        if written == "log" { try FileManager.default.removeItem(atPath: directory + "/" + LogFeedStore.fileName(1, .checkpoint)) }
        let (again, contents) = try open()
        defer { again.close() }
        #expect(contents.feeds == [old])
        #expect(contents.notes.contains { $0.contains("migrated 1 feeds") })
        #expect(try !FileManager.default.contentsOfDirectory(atPath: directory).contains(SQLiteMigrator.fileName))
    }

    /// A database left beside a generation-1 store whose log took writes (a rename that failed, before
    /// migrations checked it) is not migrated again: the log's writes are kept.
    @Test func aDatabaseBesideALogWithWritesIsNotMigratedAgain() async throws {
        let old = StoredFeed(name: "kept", history: "00000000000000aa", version: 4, snapshot: Array("snapshot 4".utf8), batches: [], viewState: nil)
        try SQLiteMigratorTests.writeDatabase(in: directory, [old])
        let (store, _) = try open()
        try await put(store, "later", version: 1)
        store.close()
        let migrated = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasPrefix(SQLiteMigrator.fileName + ".migrated-") })
        try FileManager.default.copyItem(atPath: directory + "/" + migrated, toPath: directory + "/" + SQLiteMigrator.fileName)
        let (again, contents) = try open()
        defer { again.close() }
        #expect(contents.feeds.map(\.name).sorted() == ["kept", "later"])
        #expect(!contents.notes.contains { $0.contains("migrated") })
    }

    @Test func aDamagedDatabaseIsMigratedOnlyWithSetAside() throws {
        try SQLiteMigratorTests.writeDatabase(in: directory, [SQLiteMigratorTests.news, SQLiteMigratorTests.quiet], damage: ["news": .snapshotCRC])
        let refused = try LogFeedStore(directory: directory)
        #expect { try refused.load() } throws: { "\($0)".contains("'news'") && "\($0)".contains("--set-aside-damaged") }
        refused.close()
        #expect(try files(SQLiteMigrator.fileName) == [SQLiteMigrator.fileName], "refused: the file stays")
        let (store, contents) = try open(setAside: true)
        defer { store.close() }
        #expect(contents.feeds == [SQLiteMigratorTests.quiet] && contents.setAside.map(\.name) == ["news"])
        #expect(try files(SQLiteMigrator.fileName).isEmpty)
    }

    @Test func commitsAfterCloseFailWithAnError() async throws {
        let (store, _) = try open()
        store.close()
        await #expect(throws: StoreError.self) { try await put(store, "f", version: 1) }
    }
}
