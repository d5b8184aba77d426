import Foundation
import Testing
import TestSupport
@testable import FeedStore

/// The store against its seam, without sockets: a temporary directory per test.
struct SQLiteFeedStoreTests {
    let directory: String

    init() {
        directory = NSTemporaryDirectory() + "diffstream-store-tests-" + UUID().uuidString
    }

    func open(setAside: Bool = false) throws -> (SQLiteFeedStore, StoreContents) {
        let store = try SQLiteFeedStore(directory: directory, setAsideDamaged: setAside)
        return (store, try store.load())
    }

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func put(_ store: SQLiteFeedStore, _ name: String, version: Int, keep: Int = 100, state: String? = nil) async throws {
        try await store.commit(.put(name: name, history: "00000000000000aa", version: version, snapshot: bytes("snapshot \(version)"),
                                    batch: version > 1 ? StoredBatch(version: version, bytes: bytes("batch \(version)")) : nil,
                                    keepFrom: version - keep + 1, viewState: state.map(bytes)))
    }

    /// Runs SQL on the closed store's file, as a damaged disk would.
    func tamper(_ sql: String) throws {
        let database = try SQLiteDatabase(path: directory + "/" + SQLiteFeedStore.fileName)
        try database.execute(sql)
        database.close()
    }

    @Test func aFeedComesBackWithHistoryVersionSnapshotWindowAndState() async throws {
        let (store, empty) = try open()
        #expect(empty.feeds.isEmpty)
        for version in 1...5 { try await put(store, "news", version: version, state: version == 3 ? "{\"x\":3}" : nil) }
        try await store.commit(.viewState(name: "news", bytes: bytes("{\"x\":4}")))
        store.close()
        let (reopened, contents) = try open()
        defer { reopened.close() }
        #expect(contents.feeds == [StoredFeed(name: "news", history: "00000000000000aa", version: 5, snapshot: bytes("snapshot 5"),
                                              batches: (2...5).map { StoredBatch(version: $0, bytes: bytes("batch \($0)")) }, viewState: bytes("{\"x\":4}"))])
    }

    @Test(arguments: [1, 3, 8])
    func theWindowOnDiskFollowsTheReplayLimit(limit: Int) async throws {
        let (store, _) = try open()
        for version in 1...20 { try await put(store, "f", version: version, keep: limit) }
        store.close()
        let (reopened, contents) = try open()
        defer { reopened.close() }
        #expect(contents.feeds.first?.batches.map(\.version) == Array((21 - limit)...20))
    }

    @Test func aDeletedFeedStaysDeletedAndARecreatedOneStartsFresh() async throws {
        let (store, _) = try open()
        for version in 1...4 { try await put(store, "gone", version: version) }
        try await put(store, "kept", version: 1)
        try await store.commit(.delete(name: "gone"))
        try await store.commit(.put(name: "again", history: "00000000000000bb", version: 1, snapshot: bytes("s"), batch: nil, keepFrom: 2, viewState: nil))
        store.close()
        let (reopened, contents) = try open()
        defer { reopened.close() }
        #expect(contents.feeds.map(\.name) == ["again", "kept"])
        #expect(contents.feeds.allSatisfy { $0.batches.isEmpty })
    }

    @Test func concurrentWritesShareCommits() async throws {
        let (store, _) = try open()
        defer { store.close() }
        let writers = 64
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<writers {
                group.addTask { try await self.put(store, "feed-\(index)", version: 1) }
            }
            try await group.waitForAll()
        }
        let metrics = store.metrics()
        #expect(metrics.writes == writers)
        #expect(metrics.commits < writers, "\(metrics)")
        #expect(metrics.maxWritesPerCommit > 1)
        #expect(metrics.sizeBytes > 0)
    }

    @Test func aSecondStoreOnTheDirectoryIsRefusedUntilTheFirstCloses() throws {
        let (store, _) = try open()
        #expect(throws: StoreError.locked(path: directory)) { try SQLiteFeedStore(directory: directory) }
        store.close()
        let (again, _) = try open()
        again.close()
    }

    @Test func aDirectoryThatCannotBeCreatedIsNamed() throws {
        #expect(FileManager.default.createFile(atPath: directory, contents: Data("a file".utf8)))
        let error = #expect(throws: StoreError.self) { try SQLiteFeedStore(directory: directory + "/data") }
        guard case .directory(let path, _)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(path == directory + "/data")
    }

    @Test func aCorruptSnapshotStopsTheLoadUnlessSetAside() async throws {
        let (store, _) = try open()
        for version in 1...3 { try await put(store, "bad", version: version) }
        try await put(store, "good", version: 1)
        store.close()
        try tamper("UPDATE feeds SET snapshot = x'00ff' WHERE name = 'bad'")
        let refused = try SQLiteFeedStore(directory: directory)
        let error = #expect(throws: StoreError.self) { try refused.load() }
        refused.close()
        guard case .damaged(let path, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(path.hasSuffix(SQLiteFeedStore.fileName) && reason.contains("'bad'") && reason.contains("CRC"))
        let (kept, contents) = try open(setAside: true)
        #expect(contents.feeds.map(\.name) == ["good"])
        #expect(contents.setAside.map(\.name) == ["bad"])
        kept.close()
        let (later, again) = try open()
        defer { later.close() }
        #expect(again.feeds.map(\.name) == ["good"] && again.setAside.isEmpty, "set aside once, for good")
    }

    @Test func aCorruptBatchDropsOnlyTheWindowWhenSetAside() async throws {
        let (store, _) = try open()
        for version in 1...4 { try await put(store, "f", version: version) }
        store.close()
        try tamper("UPDATE batches SET bytes = x'01' WHERE version = 3")
        let refused = try SQLiteFeedStore(directory: directory)
        #expect(throws: StoreError.self) { try refused.load() }
        refused.close()
        let (kept, contents) = try open(setAside: true)
        defer { kept.close() }
        #expect(contents.feeds.map(\.version) == [4] && contents.feeds.first?.batches == [])
    }

    @Test func anUnknownFormatVersionIsRefused() async throws {
        let (store, _) = try open()
        try await put(store, "f", version: 1)
        store.close()
        try tamper("PRAGMA user_version = 99")
        let refused = try SQLiteFeedStore(directory: directory)
        defer { refused.close() }
        let error = #expect(throws: StoreError.self) { try refused.load() }
        #expect("\(String(describing: error))".contains("format version is 99"))
    }

    @Test func aFileThatIsNotADatabaseIsMovedAsideOnlyWhenAsked() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + SQLiteFeedStore.fileName
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: 8192)))
        let refused = try SQLiteFeedStore(directory: directory)
        #expect(throws: StoreError.self) { try refused.load() }
        refused.close()
        let (store, contents) = try open(setAside: true)
        defer { store.close() }
        #expect(contents.feeds.isEmpty && contents.setAside.first?.reason.contains(".damaged-") == true)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains { $0.hasPrefix(SQLiteFeedStore.fileName + ".damaged-") })
    }

    @Test func aTornTailOfTheLogLosesNothingCommitted() async throws {
        let (store, _) = try open()
        for version in 1...6 { try await put(store, "f", version: version) }
        // Simulate a crash: copy the files while open (the WAL holds the commits), then tear its tail.
        let copy = directory + "-copy"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: store.databasePath + suffix, toPath: copy + "/" + SQLiteFeedStore.fileName + suffix)
        }
        store.close()
        let wal = try #require(FileHandle(forWritingAtPath: copy + "/" + SQLiteFeedStore.fileName + "-wal"))
        wal.seekToEndOfFile()
        wal.write(Data(repeating: 0xA7, count: 3000))  // half a frame of garbage
        wal.closeFile()
        let reopened = try SQLiteFeedStore(directory: copy)
        defer { reopened.close() }
        let contents = try reopened.load()
        #expect(contents.feeds.first?.version == 6 && contents.feeds.first?.batches.count == 5)
    }

    @Test func commitsAfterCloseFailWithAnError() async throws {
        let (store, _) = try open()
        store.close()
        await #expect(throws: StoreError.self) { try await put(store, "f", version: 1) }
    }
}
