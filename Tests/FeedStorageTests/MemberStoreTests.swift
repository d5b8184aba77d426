import Foundation
import Testing
import TestSupport
@testable import FeedStorage

/// The store of a family's members: round trips, the window, reopening, the schema version, a seeded
/// property test against a dictionary, 10,000 members read one at a time, and group commit.
struct MemberStoreTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "diffstream-member-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Removes the test's directory (each test defers it).
    func removeDirectory() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func open(maxBatches: Int = MemberStore.defaultMaxBatches) throws -> MemberStore {
        try MemberStore(directory: directory, maxBatches: maxBatches)
    }

    static func put(_ name: String, history: String = "h", version: Int, snapshot: String = "s", batch: Bool = true, keepFrom: Int = 0,
                    state: String? = nil) -> FeedWrite {
        .put(name: name, history: history, version: version, snapshot: Array("\(snapshot) \(version)".utf8),
             batch: batch ? StoredBatch(version: version, bytes: Array("batch \(version)".utf8)) : nil, keepFrom: keepFrom, viewState: state.map { Array($0.utf8) })
    }

    @discardableResult
    static func commit(_ store: MemberStore, _ write: FeedWrite) async -> FeedCommitOutcome {
        let version = if case .put(_, _, let version, _, _, _, _) = write { version - 1 } else { 0 }
        return await store.commit(FeedCommit(write, base: version, writeID: "w", answer: [7]))
    }

    /// The bytes the store counts for `feed`: its blobs' lengths.
    static func storedBytes(_ feed: StoredFeed) -> Int {
        feed.snapshot.count + MemberWindow.encode(feed.batches).count + (feed.viewState?.count ?? 0)
    }

    @Test func putViewStateAndDeleteRoundTrip() async throws {
        defer { removeDirectory() }
        let store = try open()
        defer { store.close() }
        #expect(try store.read("home.alice") == nil)
        #expect(await Self.commit(store, Self.put("home.alice", version: 1, batch: false, state: "one")) == .committed(version: 1, answer: [7], first: true))
        #expect(await Self.commit(store, Self.put("home.alice", version: 2)) == .committed(version: 2, answer: [7], first: true))
        var alice = try #require(try store.read("home.alice"))
        #expect(alice == StoredFeed(name: "home.alice", history: "h", version: 2, snapshot: Array("s 2".utf8),
                                    batches: [StoredBatch(version: 2, bytes: Array("batch 2".utf8))], viewState: Array("one".utf8)))
        // A state alone, then a put with no state: the stored state stays.
        #expect(await Self.commit(store, .viewState(name: "home.alice", bytes: [1, 2, 3])) == .committed(version: 0, answer: [7], first: true))
        #expect(try store.read("home.alice")?.viewState == [1, 2, 3])
        await Self.commit(store, Self.put("home.alice", version: 3))
        alice = try #require(try store.read("home.alice"))
        #expect(alice.viewState == [1, 2, 3])
        #expect(alice.batches.map(\.version) == [2, 3])
        // A state for a member not kept changes nothing.
        await Self.commit(store, .viewState(name: "home.bob", bytes: [9]))
        #expect(try store.read("home.bob") == nil)
        #expect(store.count() == 1)
        #expect(store.bytes() == Self.storedBytes(alice))
        // A delete answers 1 when the member existed, 0 when not, as the protocol says.
        #expect(await Self.commit(store, .delete(name: "home.alice")) == .committed(version: 1, answer: [7], first: true))
        #expect(await Self.commit(store, .delete(name: "home.alice")) == .committed(version: 0, answer: [7], first: true))
        #expect(try store.read("home.alice") == nil)
        #expect(store.count() == 0)
        #expect(store.bytes() == 0)
        await Self.commit(store, Self.put("home.carol", version: 1))
        #expect(try await store.delete("home.carol"))
        #expect(try await store.delete("home.carol") == false)
    }

    struct WindowCase: Sendable, CustomStringConvertible {
        var maxBatches: Int
        var writes: [FeedWrite]
        var window: [Int]
        var description: String { "max \(maxBatches), \(writes.count) writes: \(window)" }
    }

    static let windowCases: [WindowCase] = [
        // Every batch kept up to the cap, then the newest `maxBatches`.
        WindowCase(maxBatches: 4, writes: (1...3).map { put("m", version: $0) }, window: [1, 2, 3]),
        WindowCase(maxBatches: 4, writes: (1...9).map { put("m", version: $0) }, window: [6, 7, 8, 9]),
        // `keepFrom` cuts below the cap.
        WindowCase(maxBatches: 4, writes: (1...9).map { put("m", version: $0, keepFrom: $0 - 1) }, window: [8, 9]),
        WindowCase(maxBatches: 16, writes: (1...9).map { put("m", version: $0, keepFrom: 5) }, window: [5, 6, 7, 8, 9]),
        // A put without a batch, or out of the history's order, starts an empty window.
        WindowCase(maxBatches: 4, writes: (1...3).map { put("m", version: $0) } + [put("m", version: 4, batch: false)], window: []),
        WindowCase(maxBatches: 4, writes: (1...3).map { put("m", version: $0) } + [put("m", history: "new", version: 4)], window: [4]),
        WindowCase(maxBatches: 4, writes: (1...3).map { put("m", version: $0) } + [put("m", version: 7)], window: [7]),
        // No window at all.
        WindowCase(maxBatches: 0, writes: (1...3).map { put("m", version: $0) }, window: []),
        // A delete forgets it.
        WindowCase(maxBatches: 4, writes: (1...3).map { put("m", version: $0) } + [.delete(name: "m"), put("m", version: 4)], window: [4]),
    ]

    @Test(arguments: windowCases)
    func theWindowKeepsTheNewestBatchesFromKeepFrom(_ test: WindowCase) async throws {
        defer { removeDirectory() }
        let store = try open(maxBatches: test.maxBatches)
        defer { store.close() }
        for write in test.writes {
            let outcome = await Self.commit(store, write)
            guard case .committed = outcome else { Issue.record("\(outcome)"); return }
        }
        let member = try #require(try store.read("m"))
        #expect(member.batches.map(\.version) == test.window)
        #expect(store.bytes() == Self.storedBytes(member))
    }

    @Test func reopeningKeepsEverything() async throws {
        defer { removeDirectory() }
        var store = try open()
        for version in 1...5 { await Self.commit(store, Self.put("home.a", version: version, state: "a\(version)")) }
        await Self.commit(store, Self.put("home.b", version: 1, batch: false))
        await Self.commit(store, .viewState(name: "home.b", bytes: []))
        let before = (try store.read("home.a"), try store.read("home.b"), store.count(), store.bytes())
        store.close()
        #expect(await Self.commit(store, Self.put("home.c", version: 1)) == .unavailable(.io(path: store.path, reason: "the member store is closed")))
        #expect(throws: StoreError.self) { try store.read("home.a") }
        store = try open()
        defer { store.close() }
        #expect(try store.read("home.a") == before.0)
        #expect(try store.read("home.b") == before.1)
        #expect(try store.read("home.b")?.viewState == [])
        #expect(store.count() == 2 && before.2 == 2)
        #expect(store.bytes() == before.3)
        #expect(try store.names(withPrefix: "home.", limit: 10) == ["home.a", "home.b"])
    }

    /// `diffstream_store_size_bytes` counts the store's files on disk: the database, its WAL and the
    /// shared-memory index while open; the database alone once closed (the last connection checkpoints).
    @Test func sizeOnDiskIsTheFilesOfTheStore() async throws {
        defer { removeDirectory() }
        let store = try open()
        await Self.commit(store, Self.put("home.a", version: 1, snapshot: String(repeating: "x", count: 20_000)))
        let files = ["", "-wal", "-shm"].map { store.path + $0 }
        func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        #expect(store.sizeOnDisk() == files.map(size).reduce(0, +))
        #expect(store.sizeOnDisk() > 20_000)
        store.close()
        #expect(!FileManager.default.fileExists(atPath: files[1]))
        #expect(store.sizeOnDisk() == size(files[0]))
    }

    @Test func anUnknownSchemaVersionIsRefused() throws {
        defer { removeDirectory() }
        let path = directory + "/" + MemberStore.fileName
        let database = try SQLiteDatabase(path: path, writable: true)
        try database.execute("CREATE TABLE members (name TEXT); PRAGMA user_version=9;")
        database.close()
        let error = #expect(throws: StoreError.self) { try open() }
        guard case .damaged(let at, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(at == path)
        #expect(reason.contains("schema version (PRAGMA user_version) is 9"))
        #expect(reason.contains("reads version \(MemberWriter.formatVersion)"))
        // Refused before anything was written: still the rollback journal, not WAL.
        let check = try SQLiteDatabase(path: path)
        #expect(try check.text("PRAGMA journal_mode") == "delete")
        check.close()
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAsDamaged() throws {
        defer { removeDirectory() }
        let path = directory + "/" + MemberStore.fileName
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: StoreError.self) { try open() }
        guard case .damaged(_, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("SQLite code 26"))
    }

    /// SQLite's result codes (extended ones by their primary code) as the store's errors, which keep
    /// the call's name and the code.
    @Test(arguments: [(13, "full"), (11, "damaged"), (26, "damaged"), (5, "io"), (10 | 4 << 8, "io"), (19, "io")] as [(Int32, String)])
    func sqliteErrorsBecomeStoreErrors(code: Int32, kind: String) {
        defer { removeDirectory() }
        let error = StoreError(SQLiteError(call: "sqlite3_step", code: code, message: "it failed"), path: "/data/members.sqlite3")
        switch error {
        case .full(let path): #expect(kind == "full" && path == "/data/members.sqlite3")
        case .damaged(_, let reason), .io(_, let reason):
            #expect(kind == (error == .damaged(path: "/data/members.sqlite3", reason: reason) ? "damaged" : "io"))
            #expect(reason == "sqlite3_step: it failed (SQLite code \(code))")
        default: Issue.record("\(error)")
        }
    }

    /// The oracle: what a member store holds after `write`, from the seam's definition plus the cap.
    static func apply(_ write: FeedWrite, to members: inout [String: StoredFeed], maxBatches: Int) {
        switch write {
        case .put(let name, let history, let version, let snapshot, let batch, let keepFrom, let viewState):
            let old = members[name]
            var batches: [StoredBatch] = []
            if let batch {
                if let old, old.history == history, old.version + 1 == version { batches = old.batches }
                batches = Array((batches + [batch]).filter { $0.version >= keepFrom }.suffix(maxBatches))
            }
            members[name] = StoredFeed(name: name, history: history, version: version, snapshot: snapshot, batches: batches, viewState: viewState ?? old?.viewState)
        case .viewState(let name, let bytes):
            members[name]?.viewState = bytes
        case .delete(let name):
            members[name] = nil
        }
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomCommitsMatchADictionary(seed: UInt64) async throws {
        defer { removeDirectory() }
        let maxBatches = 4
        var script = WriteScript(seed: seed)
        var oracle: [String: StoredFeed] = [:]
        var store = try open(maxBatches: maxBatches)
        for step in 0..<300 {
            let write = script.next()
            Self.apply(write, to: &oracle, maxBatches: maxBatches)
            let outcome = await Self.commit(store, write)
            guard case .committed = outcome else { Issue.record("step \(step), seed \(seed): \(outcome)"); break }
            for name in script.names { #expect(try store.read(name) == oracle[name], "step \(step), seed \(seed), \(name)") }
            #expect(store.count() == oracle.count)
            #expect(store.bytes() == oracle.values.reduce(0) { $0 + Self.storedBytes($1) })
            if step % 100 == 99 {
                store.close()
                store = try open(maxBatches: maxBatches)
                for name in script.names { #expect(try store.read(name) == oracle[name], "after reopening, seed \(seed), \(name)") }
            }
        }
        #expect(try store.names(withPrefix: "", limit: 10) == oracle.keys.sorted())
        store.close()
    }

    static func memberName(_ index: Int) -> String {
        let digits = String(index)
        return "home.u" + String(repeating: "0", count: 5 - digits.count) + digits
    }

    /// 10,000 members, committed concurrently (so in a few groups), then read back one at a time after
    /// reopening: the count and bytes come from the totals row, not from reading them.
    @Test func tenThousandMembersAreReadOneAtATime() async throws {
        defer { removeDirectory() }
        let members = 10_000
        let writing = try open()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<members {
                group.addTask {
                    await Self.commit(writing, Self.put(Self.memberName(index), version: 1, snapshot: "snapshot of \(index)", batch: false, state: "state \(index)"))
                }
            }
        }
        let bytes = writing.bytes()
        #expect(writing.metrics().writes == members)
        #expect(writing.metrics().commits < members)
        writing.close()
        // Closed cleanly, the WAL is checkpointed into the file and removed: the next open has no log to
        // read, only the pragmas and the totals row, whatever the number of members.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [MemberStore.fileName])
        let store = try open()
        defer { store.close() }
        #expect(store.count() == members)
        #expect(store.bytes() == bytes)
        let member = try #require(try store.read(Self.memberName(4321)))
        #expect(member.snapshot == Array("snapshot of 4321 1".utf8))
        #expect(member.viewState == Array("state 4321".utf8))
        #expect(try store.names(withPrefix: "home.u0432", limit: 100) == (4320..<4330).map(Self.memberName))
        #expect(try store.names(withPrefix: "home.u", limit: 3) == (0..<3).map(Self.memberName))
        #expect(try store.names(withPrefix: "work.", limit: 3) == [])
    }

    /// Many members committing at once all land, and the queue groups them into fewer transactions.
    @Test func concurrentCommitsAllLand() async throws {
        defer { removeDirectory() }
        let store = try open()
        defer { store.close() }
        let writers = 64, rounds = 5
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for version in 1...rounds {
                        let outcome = await Self.commit(store, Self.put("home.w\(writer)", version: version))
                        #expect(outcome == .committed(version: version, answer: [7], first: true))
                    }
                }
            }
        }
        #expect(store.count() == writers)
        for writer in 0..<writers { #expect(try store.read("home.w\(writer)")?.batches.map(\.version) == Array(1...rounds)) }
        let metrics = store.metrics()
        #expect(metrics.writes == writers * rounds)
        #expect(metrics.failedCommits == 0)
        #expect(metrics.commits <= metrics.writes)
    }
}
