import Foundation
import Testing
@testable import FeedStorage

/// Reading databases of the SQLite store of earlier versions, built here with raw SQL: what is sound
/// loads exactly, damage is refused or set aside, and the file is never written.
struct SQLiteMigratorTests {
    let directory = NSTemporaryDirectory() + "diffstream-migrator-tests-" + UUID().uuidString
    var path: String { directory + "/" + SQLiteMigrator.fileName }

    func load(setAside: Bool = false) throws(StoreError) -> StoreContents {
        try SQLiteMigrator(directory: directory, setAsideDamaged: setAside).load()
    }

    /// The error of a refused load, as `.damaged(path:reason:)`, or nil.
    func refusal() -> (path: String, reason: String)? {
        let error = #expect(throws: StoreError.self) { try load() }
        guard case .damaged(let path, let reason)? = error else { Issue.record("\(String(describing: error))"); return nil }
        return (path, reason)
    }

    static let news = StoredFeed(name: "news", history: "00000000000000aa", version: 5, snapshot: Array("snapshot 5".utf8),
                                 batches: (2...5).map { StoredBatch(version: $0, bytes: Array("batch \($0)".utf8)) }, viewState: Array("{\"x\":4}".utf8))
    static let quiet = StoredFeed(name: "quiet", history: "00000000000000bb", version: 1, snapshot: Array("s".utf8), batches: [], viewState: nil)

    @Test(arguments: [0, 1])
    func aSoundDatabaseLoadsExactly(format: Int) throws {
        try Self.writeDatabase(in: directory, [Self.quiet, Self.news], format: format)
        let contents = try load()
        #expect(contents.feeds == [Self.news, Self.quiet] && contents.setAside.isEmpty)
    }

    @Test func aDatabaseWithoutTablesHoldsNoFeeds() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        #expect(try load().feeds.isEmpty)
    }

    @Test(arguments: [Damage.snapshotCRC, .viewStateCRC, .history])
    func aDamagedFeedIsRefusedNamingItAndTheFlag(damage: Damage) throws {
        try Self.writeDatabase(in: directory, [Self.news, Self.quiet], damage: ["news": damage])
        guard let (path, reason) = refusal() else { return }
        #expect(path == self.path)
        #expect(reason.contains("feed 'news'") && reason.hasSuffix("; start with --set-aside-damaged to keep what can be read and move the rest aside"), "\(reason)")
    }

    @Test(arguments: [Damage.snapshotCRC, .viewStateCRC, .history])
    func withSetAsideADamagedFeedIsSetAsideAndTheRestLoads(damage: Damage) throws {
        try Self.writeDatabase(in: directory, [Self.news, Self.quiet], damage: ["news": damage])
        let contents = try load(setAside: true)
        #expect(contents.feeds == [Self.quiet])
        #expect(contents.setAside.map(\.name) == ["news"])
    }

    @Test(arguments: [Damage.batchCRC(version: 3), .missingBatch(version: 3)])
    func aDamagedWindowKeepsTheSnapshot(damage: Damage) throws {
        try Self.writeDatabase(in: directory, [Self.news, Self.quiet], damage: ["news": damage])
        guard let (_, reason) = refusal() else { return }
        #expect(reason.contains("feed 'news'") && reason.contains("--set-aside-damaged"))
        let contents = try load(setAside: true)
        var kept = Self.news
        kept.batches = []
        #expect(contents.feeds == [kept, Self.quiet])
        #expect(contents.setAside.map(\.name) == ["news"])
    }

    @Test func aFileThatIsNotADatabaseIsRefusedOrSetAsideWhole() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: 8192)))
        guard let (_, reason) = refusal() else { return }
        #expect(reason.contains("not a readable SQLite database") && reason.contains("--set-aside-damaged"), "\(reason)")
        let contents = try load(setAside: true)
        #expect(contents.feeds.isEmpty && contents.setAside.map(\.name) == ["*"])
    }

    @Test func anUnknownFormatIsRefused() throws {
        try Self.writeDatabase(in: directory, [Self.quiet], format: 99)
        guard let (_, reason) = refusal() else { return }
        #expect(reason.contains("format version is 99"))
    }

    @Test(arguments: [false, true], [nil, Damage.snapshotCRC, .batchCRC(version: 3)])
    func theFileIsNeverModified(setAside: Bool, damage: Damage?) throws {
        try Self.writeDatabase(in: directory, [Self.news, Self.quiet], damage: damage.map { ["news": $0] } ?? [:])
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        _ = try? load(setAside: setAside)
        _ = try? load(setAside: setAside)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == names)
    }

    @Test func commitsStillInTheWriteAheadLogAreRead() throws {
        // The SQLite store ran in WAL mode: a crash left its last commits in `feeds.sqlite3-wal`.
        let live = directory + "-live"
        try Self.writeDatabase(in: live, [Self.quiet])
        let database = try SQLiteDatabase(path: live + "/" + SQLiteMigrator.fileName, writable: true)
        #expect(try database.text("PRAGMA journal_mode=WAL") == "wal")
        try database.execute("PRAGMA wal_autocheckpoint=0")
        try Self.insert(Self.news, into: database)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {  // copied while open, as a crash leaves them
            try FileManager.default.copyItem(atPath: live + "/" + SQLiteMigrator.fileName + suffix, toPath: path + suffix)
        }
        database.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try load().feeds == [Self.news, Self.quiet])
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}

// MARK: Databases of earlier versions

extension SQLiteMigratorTests {
    /// How a feed's rows are broken on purpose.
    enum Damage: Sendable, Equatable, CustomStringConvertible {
        case snapshotCRC, viewStateCRC, history
        case batchCRC(version: Int)
        case missingBatch(version: Int)

        var description: String {
            switch self {
            case .snapshotCRC: "snapshot CRC"
            case .viewStateCRC: "view state CRC"
            case .history: "history"
            case .batchCRC(let version): "CRC of batch \(version)"
            case .missingBatch(let version): "batch \(version) missing"
            }
        }
    }

    /// Writes `directory/feeds.sqlite3` as the SQLite store did (its schema, `user_version` `format`),
    /// holding `feeds` with correct CRC-32s but where `damage` says otherwise.
    static func writeDatabase(in directory: String, _ feeds: [StoredFeed], format: Int = 1, damage: [String: Damage] = [:]) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let database = try SQLiteDatabase(path: directory + "/" + SQLiteMigrator.fileName, writable: true)
        defer { database.close() }
        try database.execute("""
            CREATE TABLE feeds (name TEXT PRIMARY KEY, history TEXT NOT NULL, version INTEGER NOT NULL,
                snapshot BLOB NOT NULL, snapshot_crc INTEGER NOT NULL, view_state BLOB, view_crc INTEGER);
            CREATE TABLE batches (feed TEXT NOT NULL, version INTEGER NOT NULL, bytes BLOB NOT NULL,
                crc INTEGER NOT NULL, PRIMARY KEY (feed, version)) WITHOUT ROWID;
            CREATE TABLE damaged_feeds (name TEXT NOT NULL, reason TEXT NOT NULL, set_aside_at INTEGER NOT NULL,
                history TEXT, version INTEGER, snapshot BLOB, view_state BLOB);
            PRAGMA user_version=\(format);
            """)
        for feed in feeds { try insert(feed, into: database, damage: damage[feed.name]) }
    }

    /// Inserts one feed's rows.
    static func insert(_ feed: StoredFeed, into database: SQLiteDatabase, damage: Damage? = nil) throws {
        func crc(_ bytes: [UInt8], broken: Bool) -> SQLiteValue { .integer(Int(CRC32.checksum(bytes) ^ (broken ? 1 : 0))) }
        let history = damage == .history ? "short" : feed.history
        try database.prepare("INSERT INTO feeds VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)").run([
            .text(feed.name), .text(history), .integer(feed.version),
            .blob(feed.snapshot), crc(feed.snapshot, broken: damage == .snapshotCRC),
            feed.viewState.map { .blob($0) } ?? .null, feed.viewState.map { crc($0, broken: damage == .viewStateCRC) } ?? .null,
        ])
        for batch in feed.batches where damage != .missingBatch(version: batch.version) {
            try database.prepare("INSERT INTO batches VALUES (?1, ?2, ?3, ?4)").run([
                .text(feed.name), .integer(batch.version), .blob(batch.bytes), crc(batch.bytes, broken: damage == .batchCRC(version: batch.version)),
            ])
        }
    }
}
