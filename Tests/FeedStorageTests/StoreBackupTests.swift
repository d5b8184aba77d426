import Foundation
import Testing
import TestSupport
@testable import FeedStorage

/// A data directory as the server lays it out, for the backup and restore tests: the log store in
/// `DIR`, the family members' store in `DIR/members`.
struct DataDirectory {
    let path: String

    init(path: String) {
        self.path = path
    }

    /// A new temporary directory's path.
    init(_ label: String) {
        path = NSTemporaryDirectory() + "diffstream-\(label)-" + UUID().uuidString
    }

    var members: String { path + "/" + MemberStore.directoryName }
    var marked: Bool { FileManager.default.fileExists(atPath: path + "/" + RestoreMarker.fileName) }

    /// Opens both stores as a server's start does: the log store loaded first (which applies a restore
    /// marker), then the member store.
    func open() throws -> (log: LogFeedStore, contents: StoreContents, members: MemberStore) {
        let log = try LogFeedStore(directory: path)
        let contents = try log.load()
        try FileManager.default.createDirectory(atPath: members, withIntermediateDirectories: true)
        return (log, contents, try MemberStore(directory: members))
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    static func put(_ name: String, history: String, version: Int, snapshot: [UInt8], state: [UInt8]? = nil) -> FeedWrite {
        .put(name: name, history: history, version: version, snapshot: snapshot,
             batch: version > 1 ? StoredBatch(version: version, bytes: Array("batch \(name) \(version)".utf8)) : nil,
             keepFrom: version - 7, viewState: state)
    }

    static func commit(_ members: MemberStore, _ write: FeedWrite) async throws {
        let version = if case .put(_, _, let version, _, _, _, _) = write { version - 1 } else { 0 }
        guard case .committed = await members.commit(FeedCommit(write, base: version, writeID: "w")) else {
            throw StoreError.io(path: members.path, reason: "a member write failed")
        }
    }

    /// Every member `members` keeps, by name.
    static func read(_ members: MemberStore) throws -> [String: StoredFeed] {
        var found: [String: StoredFeed] = [:]
        for name in try members.names(withPrefix: "", limit: .max) { found[name] = try members.read(name) }
        return found
    }
}

/// `diffstream backup` (issue 51): the log's files and the family members' store, copied while both are
/// open and written, read back, and marked.
struct StoreBackupTests {
    @Test func aBackupHoldsTheFeedsAndTheMembersAndIsMarked() async throws {
        let data = DataDirectory("backup-source"), copy = DataDirectory("backup-copy")
        defer { data.remove(); copy.remove() }
        let (log, _, members) = try data.open()
        for version in 1...5 {
            try await log.commit(DataDirectory.put("news", history: "00000000000000aa", version: version, snapshot: Array("news \(version)".utf8)))
            for user in ["alice", "bob"] {
                try await DataDirectory.commit(members, DataDirectory.put("home.\(user)", history: "00000000000000b\(user.count)", version: version,
                                                                          snapshot: Array("\(user) \(version)".utf8), state: Array("{\"v\":\(version)}".utf8)))
            }
        }
        let memberFiles = try FileManager.default.contentsOfDirectory(atPath: data.members)
        #expect(memberFiles.contains(MemberStore.fileName + "-wal"), "the members' writes are in the WAL, as while a server runs")
        // Both stores open, as in a running server: the copy takes neither's lock.
        let copied = try LogFeedStore.backup(from: data.path, to: copy.path)
        #expect(copied.feeds == 1 && copied.members == 2)
        #expect(copy.marked)
        let originals = try DataDirectory.read(members)
        log.close()
        members.close()

        // Read as they were copied (the marker is only applied by a load, and a member store opened alone).
        let kept = try MemberStore(directory: copy.members)
        defer { kept.close() }
        #expect(try DataDirectory.read(kept) == originals)
        #expect(kept.count() == 2 && kept.bytes() == originals.values.reduce(0) { $0 + MemberStoreTests.storedBytes($1) })
    }

    @Test func aBackupOfAStoreWithoutMembersHasNone() async throws {
        let data = DataDirectory("backup-no-members"), copy = DataDirectory("backup-no-members-copy")
        defer { data.remove(); copy.remove() }
        let log = try LogFeedStore(directory: data.path)
        _ = try log.load()
        try await log.commit(DataDirectory.put("news", history: "00000000000000aa", version: 1, snapshot: [1]))
        defer { log.close() }
        let copied = try LogFeedStore.backup(from: data.path, to: copy.path)
        #expect(copied.feeds == 1 && copied.members == nil)
        #expect(!FileManager.default.fileExists(atPath: copy.members))
    }

    @Test func membersWrittenDuringTheBackupLeaveAConsistentCopy() async throws {
        let data = DataDirectory("backup-busy"), copy = DataDirectory("backup-busy-copy")
        defer { data.remove(); copy.remove() }
        let (log, _, members) = try data.open()
        defer { log.close(); members.close() }
        for index in 0..<50 { try await DataDirectory.commit(members, DataDirectory.put("home.u\(index)", history: "00000000000000cc", version: 1, snapshot: [UInt8(index)])) }
        let writer = Task {
            for index in 50..<150 { try await DataDirectory.commit(members, DataDirectory.put("home.u\(index)", history: "00000000000000cc", version: 1, snapshot: [1])) }
        }
        let copied = try LogFeedStore.backup(from: data.path, to: copy.path)
        try await writer.value
        let count = try #require(copied.members)
        #expect((50...150).contains(count))
        #expect(try MemberStore.check(path: copy.members + "/" + MemberStore.fileName) == count)
    }

    @Test func aDestinationHoldingAMemberStoreIsRefused() async throws {
        let data = DataDirectory("backup-refused"), copy = DataDirectory("backup-refused-copy")
        defer { data.remove(); copy.remove() }
        let log = try LogFeedStore(directory: data.path)
        _ = try log.load()
        log.close()
        try FileManager.default.createDirectory(atPath: copy.members, withIntermediateDirectories: true)
        MemberStore.makeEmpty(in: copy.members)
        #expect { try LogFeedStore.backup(from: data.path, to: copy.path) } throws: { error in
            guard case StoreError.directory(_, let reason) = error else { return false }
            return reason.contains("already holds store files")
        }
    }

    /// The check a backup ends with reads every member and compares their number with the totals row.
    @Test func theCheckRefusesAMemberStoreWhoseTotalsDoNotMatch() async throws {
        let data = DataDirectory("backup-check")
        defer { data.remove() }
        try FileManager.default.createDirectory(atPath: data.members, withIntermediateDirectories: true)
        let members = try MemberStore(directory: data.members)
        try await DataDirectory.commit(members, DataDirectory.put("home.a", history: "00000000000000dd", version: 1, snapshot: [1]))
        members.close()
        let path = data.members + "/" + MemberStore.fileName
        #expect(try MemberStore.check(path: path) == 1)
        let database = try SQLiteDatabase(path: path, writable: true)
        try database.execute("UPDATE totals SET members = 3")
        database.close()
        #expect { try MemberStore.check(path: path) } throws: { error in
            guard case StoreError.damaged(_, let reason) = error else { return false }
            return reason.contains("totals row says 3")
        }
    }
}

extension MemberStore {
    /// An empty member store file in `directory`, for the tests.
    static func makeEmpty(in directory: String) {
        (try? MemberStore(directory: directory))?.close()
    }
}

/// Restores are explicit (issue 51): a start on a marked copy takes new histories for every feed and
/// every member, then removes the marker; a plain restart keeps them.
struct RestoreMarkerTests {
    @Test func aStartOnAMarkedCopyTakesNewHistoriesAndAPlainRestartKeepsThem() async throws {
        let data = DataDirectory("restore-source"), copy = DataDirectory("restore-copy")
        defer { data.remove(); copy.remove() }
        let (log, _, members) = try data.open()
        for version in 1...5 {
            try await log.commit(DataDirectory.put("news", history: "00000000000000aa", version: version, snapshot: Array("news \(version)".utf8), state: [9]))
            try await DataDirectory.commit(members, DataDirectory.put("home.alice", history: "00000000000000bb", version: version, snapshot: Array("alice \(version)".utf8), state: [7]))
        }
        _ = try LogFeedStore.backup(from: data.path, to: copy.path)
        log.close()
        members.close()

        let (restored, contents, restoredMembers) = try copy.open()
        let feed = try #require(contents.feeds.first)
        #expect(feed.history != "00000000000000aa" && feed.history.count == 16)
        #expect(feed.version == 5 && feed.snapshot == Array("news 5".utf8) && feed.viewState == [9] && feed.batches.isEmpty)
        let member = try #require(try restoredMembers.read("home.alice"))
        #expect(member.history != "00000000000000bb" && member.history.count == 16)
        #expect(member.version == 5 && member.snapshot == Array("alice 5".utf8) && member.viewState == [7] && member.batches.isEmpty)
        #expect(restoredMembers.bytes() == MemberStoreTests.storedBytes(member))
        #expect(!copy.marked)
        #expect(contents.notes.contains { $0.contains("1 feeds and 1 family members start new histories") })
        restored.close()
        restoredMembers.close()

        let (again, contentsAgain, membersAgain) = try copy.open()
        defer { again.close(); membersAgain.close() }
        #expect(contentsAgain.feeds == [feed] && contentsAgain.notes.isEmpty)
        #expect(try membersAgain.read("home.alice") == member)
    }

    @Test func markingACopyMadeByHandRefusesADirectoryInUseOrWithoutAStore() async throws {
        let data = DataDirectory("restore-in-place")
        defer { data.remove() }
        try FileManager.default.createDirectory(atPath: data.path, withIntermediateDirectories: true)
        #expect { try LogFeedStore.markRestored(data.path) } throws: { error in
            guard case StoreError.directory(_, let reason) = error else { return false }
            return reason.contains("holds no store files")
        }
        let (log, _, members) = try data.open()
        try await log.commit(DataDirectory.put("news", history: "00000000000000aa", version: 1, snapshot: [1]))
        #expect(throws: StoreError.locked(path: data.path)) { try LogFeedStore.markRestored(data.path) }
        log.close()
        members.close()
        try LogFeedStore.markRestored(data.path)
        #expect(data.marked)
        let (again, contents, membersAgain) = try data.open()
        defer { again.close(); membersAgain.close() }
        #expect(contents.feeds.map(\.history) != ["00000000000000aa"] && !data.marked)
    }

    /// A start cut short after the feeds' new histories but before the marker went takes new ones again:
    /// the marker is removed last.
    @Test func aMarkerStillThereTakesNewHistoriesAgain() async throws {
        let data = DataDirectory("restore-again")
        defer { data.remove() }
        let (log, _, members) = try data.open()
        try await log.commit(DataDirectory.put("news", history: "00000000000000aa", version: 3, snapshot: [1]))
        log.close()
        members.close()
        var seen: Set<String> = ["00000000000000aa"]
        for _ in 0..<3 {
            try LogFeedStore.markRestored(data.path)
            let (again, contents, membersAgain) = try data.open()
            let history = try #require(contents.feeds.first?.history)
            #expect(seen.insert(history).inserted)
            again.close()
            membersAgain.close()
        }
    }
}
