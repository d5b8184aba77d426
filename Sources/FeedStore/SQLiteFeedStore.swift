import CSQLite
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded store: one SQLite database in WAL mode with `synchronous=FULL`, in a directory locked
/// against a second process.
///
/// One thread owns the connection. Writers queue their write and wait; the thread takes everything
/// queued, applies it in one transaction and commits (one fsync for all of them: group commit), then
/// answers each writer. A failed transaction is rolled back and, when it held several writes, each is
/// retried on its own, so one write that does not fit does not fail the others.
///
/// Every snapshot, batch and view state is stored with its CRC-32; ``load()`` checks them, and
/// SQLite's `quick_check` checks the file's structure. See `docs/architecture.md` for what happens on a
/// torn write, a full disk and a corrupt file.
public final class SQLiteFeedStore: FeedStore, @unchecked Sendable {
    // `@unchecked Sendable`: `database` and `statements` are used by the thread calling `init` and
    // `load()` until `load()` starts the committer's thread, and only by that thread afterwards
    // (`close()` touches them after stopping it); the committer guards its own state.

    /// The schema version this build reads and writes (`PRAGMA user_version`).
    public static let formatVersion = 1
    /// The database's file name inside the data directory.
    public static let fileName = "feeds.sqlite3"

    public let directory: String
    public var databasePath: String { directory + "/" + Self.fileName }
    private let setAsideDamaged: Bool
    private let lock: DirectoryLock?
    private var database: SQLiteDatabase
    private var statements: Statements?
    private let committer: GroupCommitter

    /// Opens (creating if needed) and locks `directory`.
    /// - Parameter setAsideDamaged: on damaged data, set the damaged feeds (or file) aside and go on,
    ///   instead of refusing to start.
    /// - Throws: ``StoreError/directory(path:reason:)``, ``StoreError/locked(path:)``,
    ///   ``StoreError/damaged(path:reason:)``.
    public convenience init(directory: String, setAsideDamaged: Bool = false) throws(StoreError) {
        try self.init(directory: directory, setAsideDamaged: setAsideDamaged, lock: try DirectoryLock(directory: directory))
    }

    /// With `lock` nil, the caller holds the directory's lock already (``LogFeedStore`` migrating a
    /// database of an earlier version).
    init(directory: String, setAsideDamaged: Bool, lock: DirectoryLock?) throws(StoreError) {
        self.directory = directory
        self.setAsideDamaged = setAsideDamaged
        self.lock = lock
        committer = GroupCommitter(path: directory + "/" + Self.fileName)
        do {
            database = try SQLiteDatabase(path: directory + "/" + Self.fileName)
        } catch {
            throw .directory(path: directory + "/" + Self.fileName, reason: error.description)
        }
    }

    /// Finishes the writes already queued, stops the store thread, closes the database and releases the
    /// directory's lock. Commits after this fail.
    public func close() {
        committer.stop()
        statements = nil
        database.close()
        lock?.release()
    }

    // MARK: Loading

    public func load() throws(StoreError) -> StoreContents {
        guard !committer.isRunning else {
            throw .io(path: databasePath, reason: "load() was called after the store had started committing; call it once, before the first commit")
        }
        var contents: StoreContents
        do {
            contents = try loadChecked()
        } catch let damage as Damage {
            guard setAsideDamaged else {
                throw .damaged(path: databasePath, reason: damage.reason + "; start with --set-aside-damaged to keep what can be read and move the rest aside")
            }
            contents = try salvage(after: damage)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io(path: databasePath, reason: "\(error)")
        }
        do {
            statements = try Statements(database)
        } catch {
            throw .io(path: databasePath, reason: error.description)
        }
        refreshSize()
        committer.start(threadName: "diffstream-store") { [self] writes in
            let results = commitGroup(writes)
            refreshSize()
            return results
        }
        return contents
    }

    /// Damage found while loading: the whole file (structure, format) or single feeds.
    private struct Damage: Error {
        var reason: String
        var wholeFile: Bool
        var feeds: [(name: String, reason: String, snapshotIntact: Bool)] = []
    }

    private func loadChecked() throws -> StoreContents {
        let format: Int
        do {
            try database.execute("PRAGMA busy_timeout=5000")
            format = Int(try database.text("PRAGMA user_version") ?? "0") ?? -1
        } catch {
            throw Damage(reason: "it is not a readable SQLite database (\(error.description))", wholeFile: true)
        }
        if format != 0 && format != Self.formatVersion {
            throw Damage(reason: "its format version is \(format), and this build reads version \(Self.formatVersion)", wholeFile: true)
        }
        do {
            try configure()
        } catch where error.isCorrupt {
            throw Damage(reason: error.description, wholeFile: true)
        } catch {
            throw StoreError.directory(path: databasePath, reason: error.description)
        }
        let check: String
        do { check = try database.text("PRAGMA quick_check") ?? "no answer" } catch { throw Damage(reason: "quick_check failed: \(error.description)", wholeFile: true) }
        guard check == "ok" else { throw Damage(reason: "SQLite's quick_check reports: \(check)", wholeFile: true) }
        let names: [String]
        do { names = try feedNames() } catch { throw Damage(reason: error.description, wholeFile: true) }
        var feeds: [StoredFeed] = []
        var damage = Damage(reason: "", wholeFile: false)
        for name in names {
            do {
                let (feed, problem) = try readFeed(name)
                if let problem { damage.feeds.append((name, problem, feed != nil)) } else if let feed { feeds.append(feed) }
            } catch {
                throw Damage(reason: error.description, wholeFile: true)
            }
        }
        guard damage.feeds.isEmpty else {
            damage.reason = damage.feeds.map { "feed '\($0.name)': \($0.reason)" }.joined(separator: "; ")
            throw damage
        }
        return StoreContents(feeds: feeds)
    }

    /// Sets the pragmas and creates the schema (idempotent).
    private func configure() throws(SQLiteError) {
        let mode = try database.text("PRAGMA journal_mode=WAL")
        guard mode == "wal" else { throw SQLiteError(call: "PRAGMA journal_mode=WAL", code: SQLITE_ERROR, message: "the journal mode stayed '\(mode ?? "?")'") }
        // FULL: the WAL is fsynced at every commit, so a commit that returned survives power loss.
        try database.execute("PRAGMA synchronous=FULL")
        // Checkpoint every 256 pages (1 MiB at 4 KiB pages) and cut the WAL back to 1 MiB afterwards,
        // so the directory stays a small multiple of the live data under a long write storm.
        try database.execute("PRAGMA wal_autocheckpoint=256")
        try database.execute("PRAGMA journal_size_limit=1048576")
        try database.execute("""
            BEGIN;
            CREATE TABLE IF NOT EXISTS feeds (name TEXT PRIMARY KEY, history TEXT NOT NULL, version INTEGER NOT NULL,
                snapshot BLOB NOT NULL, snapshot_crc INTEGER NOT NULL, view_state BLOB, view_crc INTEGER);
            CREATE TABLE IF NOT EXISTS batches (feed TEXT NOT NULL, version INTEGER NOT NULL, bytes BLOB NOT NULL,
                crc INTEGER NOT NULL, PRIMARY KEY (feed, version)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS damaged_feeds (name TEXT NOT NULL, reason TEXT NOT NULL, set_aside_at INTEGER NOT NULL,
                history TEXT, version INTEGER, snapshot BLOB, view_state BLOB);
            PRAGMA user_version=\(Self.formatVersion);
            COMMIT;
            """)
    }

    private func feedNames() throws(SQLiteError) -> [String] {
        let statement = try database.prepare("SELECT name FROM feeds ORDER BY name")
        var names: [String] = []
        while try statement.step() { names.append(statement.text(0) ?? "") }
        return names
    }

    /// One feed with its checks: (feed, nil) when sound; (feed, problem) when only its replay window is
    /// damaged; (nil, problem) when its snapshot or state is.
    private func readFeed(_ name: String) throws(SQLiteError) -> (StoredFeed?, String?) {
        let row = try database.prepare("SELECT history, version, snapshot, snapshot_crc, view_state, view_crc FROM feeds WHERE name = ?1")
        try row.reset([.text(name)])
        guard try row.step() else { return (nil, "vanished while loading") }
        let history = row.text(0) ?? ""
        let version = row.integer(1)
        let snapshot = row.blob(2)
        guard UInt32(truncatingIfNeeded: row.integer(3)) == CRC32.checksum(snapshot) else { return (nil, "its snapshot fails its CRC-32") }
        var viewState: [UInt8]?
        if !row.isNull(4) {
            let bytes = row.blob(4)
            guard UInt32(truncatingIfNeeded: row.integer(5)) == CRC32.checksum(bytes) else { return (nil, "its view-model state fails its CRC-32") }
            viewState = bytes
        }
        guard version >= 1, history.utf8.count == 16 else { return (nil, "its history '\(history)' or version \(version) is not valid") }
        var feed = StoredFeed(name: name, history: history, version: version, snapshot: snapshot, batches: [], viewState: viewState)
        let batches = try database.prepare("SELECT version, bytes, crc FROM batches WHERE feed = ?1 ORDER BY version")
        try batches.reset([.text(name)])
        while try batches.step() {
            let bytes = batches.blob(1)
            guard UInt32(truncatingIfNeeded: batches.integer(2)) == CRC32.checksum(bytes) else { return (feed, "batch \(batches.integer(0)) fails its CRC-32") }
            feed.batches.append(StoredBatch(version: batches.integer(0), bytes: bytes))
        }
        for (offset, batch) in feed.batches.enumerated() where batch.version != version - feed.batches.count + 1 + offset {
            return (feed, "its replay window is not consecutive up to version \(version) (found batch \(batch.version))")
        }
        return (feed, nil)
    }

    /// With `setAsideDamaged`: damaged feeds move to `damaged_feeds` (a damaged window is dropped, so
    /// its clients resync with a snapshot); a damaged file is renamed aside and what can be read of it
    /// is copied into a new one.
    private func salvage(after damage: Damage) throws(StoreError) -> StoreContents {
        var contents = StoreContents(feeds: [])
        do {
            if !damage.wholeFile {
                try database.execute("BEGIN IMMEDIATE")
                let now = Int(Date().timeIntervalSince1970)
                for feed in damage.feeds {
                    contents.setAside.append((feed.name, feed.reason))
                    if feed.snapshotIntact {
                        try database.prepare("DELETE FROM batches WHERE feed = ?1").run([.text(feed.name)])
                    } else {
                        try database.prepare("INSERT INTO damaged_feeds SELECT name, ?2, ?3, history, version, snapshot, view_state FROM feeds WHERE name = ?1").run([.text(feed.name), .text(feed.reason), .integer(now)])
                        try database.prepare("DELETE FROM feeds WHERE name = ?1").run([.text(feed.name)])
                        try database.prepare("DELETE FROM batches WHERE feed = ?1").run([.text(feed.name)])
                    }
                }
                try database.execute("COMMIT")
                contents.feeds = try loadChecked().feeds
                return contents
            }
            // The whole file: read what can be read, feed by feed.
            var readable: [StoredFeed] = []
            if let names = try? feedNames() {
                for name in names {
                    if let (feed, problem) = try? readFeed(name), let feed {
                        var kept = feed
                        if problem != nil { kept.batches = [] }
                        readable.append(kept)
                    } else {
                        contents.setAside.append((name, "unreadable in the damaged file"))
                    }
                }
            }
            let aside = databasePath + ".damaged-\(Int(Date().timeIntervalSince1970))"
            database = try SQLiteDatabase(path: ":memory:")
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: databasePath + suffix) {
                guard rename(databasePath + suffix, aside + suffix) == 0 else {
                    throw StoreError.directory(path: databasePath + suffix, reason: "rename to \(aside + suffix): \(String(cString: strerror(errno)))")
                }
            }
            contents.setAside.append(("*", "the damaged file was moved to \(aside) (\(damage.reason))"))
            database = try SQLiteDatabase(path: databasePath)
            try configure()
            try database.execute("BEGIN IMMEDIATE")
            let statements = try Statements(database)
            for feed in readable {
                try statements.putFeed.run([.text(feed.name), .text(feed.history), .integer(feed.version), .blob(feed.snapshot), .integer(Int(CRC32.checksum(feed.snapshot))),
                                            feed.viewState.map { .blob($0) } ?? .null, feed.viewState.map { .integer(Int(CRC32.checksum($0))) } ?? .null])
                for batch in feed.batches {
                    try statements.putBatch.run([.text(feed.name), .integer(batch.version), .blob(batch.bytes), .integer(Int(CRC32.checksum(batch.bytes)))])
                }
            }
            try database.execute("COMMIT")
            contents.feeds = readable
            return contents
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw .damaged(path: databasePath, reason: "setting the damaged data aside failed: \(error.description)")
        } catch {
            throw .damaged(path: databasePath, reason: "\(damage.reason); setting it aside failed: \(error)")
        }
    }

    // MARK: Writing

    public func commit(_ write: FeedWrite) async throws(StoreError) {
        try await committer.submit(write)
    }

    public func metrics() -> StoreMetrics { committer.metrics() }

    /// One transaction for all; if it fails and there were several, one transaction each.
    private func commitGroup(_ writes: [FeedWrite]) -> [Result<Void, StoreError>] {
        switch transaction(writes) {
        case .success: return writes.map { _ in .success(()) }
        case .failure(let error) where writes.count == 1: return [.failure(error)]
        case .failure: return writes.map { transaction([$0]) }
        }
    }

    private func transaction(_ writes: [FeedWrite]) -> Result<Void, StoreError> {
        guard let statements else { return .failure(.io(path: databasePath, reason: "the store was not loaded")) }
        do {
            try statements.begin.run([])
            for write in writes { try apply(write, statements) }
            try statements.commit.run([])
            return .success(())
        } catch {
            try? database.execute("ROLLBACK")
            return .failure(error.isFull ? .full(path: directory) : .io(path: databasePath, reason: error.description))
        }
    }

    private func apply(_ write: FeedWrite, _ statements: Statements) throws(SQLiteError) {
        switch write {
        case .put(let name, let history, let version, let snapshot, let batch, let keepFrom, let viewState):
            try statements.putFeed.run([.text(name), .text(history), .integer(version), .blob(snapshot), .integer(Int(CRC32.checksum(snapshot))),
                                        viewState.map { .blob($0) } ?? .null, viewState.map { .integer(Int(CRC32.checksum($0))) } ?? .null])
            if let batch {
                try statements.putBatch.run([.text(name), .integer(batch.version), .blob(batch.bytes), .integer(Int(CRC32.checksum(batch.bytes)))])
                try statements.trimBatches.run([.text(name), .integer(keepFrom)])
            } else {
                try statements.deleteBatches.run([.text(name)])
            }
        case .viewState(let name, let bytes):
            try statements.putViewState.run([.text(name), .blob(bytes), .integer(Int(CRC32.checksum(bytes)))])
        case .delete(let name):
            try statements.deleteFeed.run([.text(name)])
            try statements.deleteBatches.run([.text(name)])
        }
    }

    private func refreshSize() {
        var total = 0
        for suffix in ["", "-wal", "-shm"] {
            var info = stat()
            if stat(databasePath + suffix, &info) == 0 { total += Int(info.st_size) }
        }
        committer.updateMetrics { $0.sizeBytes = total }
    }

    /// The prepared statements of the write path.
    private struct Statements {
        let begin, commit, putFeed, putBatch, trimBatches, deleteBatches, putViewState, deleteFeed: SQLiteStatement
        init(_ database: SQLiteDatabase) throws(SQLiteError) {
            begin = try database.prepare("BEGIN IMMEDIATE")
            commit = try database.prepare("COMMIT")
            putFeed = try database.prepare("""
                INSERT INTO feeds (name, history, version, snapshot, snapshot_crc, view_state, view_crc) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                ON CONFLICT (name) DO UPDATE SET history = excluded.history, version = excluded.version, snapshot = excluded.snapshot,
                snapshot_crc = excluded.snapshot_crc, view_state = coalesce(excluded.view_state, view_state), view_crc = coalesce(excluded.view_crc, view_crc)
                """)
            putBatch = try database.prepare("INSERT OR REPLACE INTO batches (feed, version, bytes, crc) VALUES (?1, ?2, ?3, ?4)")
            trimBatches = try database.prepare("DELETE FROM batches WHERE feed = ?1 AND version < ?2")
            deleteBatches = try database.prepare("DELETE FROM batches WHERE feed = ?1")
            putViewState = try database.prepare("UPDATE feeds SET view_state = ?2, view_crc = ?3 WHERE name = ?1")
            deleteFeed = try database.prepare("DELETE FROM feeds WHERE name = ?1")
        }
    }
}
