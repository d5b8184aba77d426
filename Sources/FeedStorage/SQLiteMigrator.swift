import CSQLite

/// Reads the database of the SQLite store of earlier versions (`feeds.sqlite3`), once, for
/// ``LogFeedStore`` to migrate: it loads and salvages, and nothing else.
///
/// The file is opened read-only and never written: no schema is created, no pragma that writes is set,
/// and damage set aside is only left out of what ``load()`` returns (the caller renames the whole file
/// to `feeds.sqlite3.migrated-<time>` afterwards, so nothing is lost). It reads formats
/// (`PRAGMA user_version`) 0 and 1 of the schema the store wrote:
///
/// ```sql
/// CREATE TABLE feeds (name TEXT PRIMARY KEY, history TEXT NOT NULL, version INTEGER NOT NULL,
///     snapshot BLOB NOT NULL, snapshot_crc INTEGER NOT NULL, view_state BLOB, view_crc INTEGER);
/// CREATE TABLE batches (feed TEXT NOT NULL, version INTEGER NOT NULL, bytes BLOB NOT NULL,
///     crc INTEGER NOT NULL, PRIMARY KEY (feed, version)) WITHOUT ROWID;
/// CREATE TABLE damaged_feeds (name TEXT NOT NULL, reason TEXT NOT NULL, set_aside_at INTEGER NOT NULL,
///     history TEXT, version INTEGER, snapshot BLOB, view_state BLOB);
/// ```
///
/// Every snapshot, batch and view state was stored with its CRC-32; ``load()`` checks them, and
/// SQLite's `quick_check` checks the file's structure. Commits still in the file's write-ahead log
/// (`-wal`) are read as SQLite reads them.
struct SQLiteMigrator {
    /// The newest format (`PRAGMA user_version`) the store wrote; 0 is a database from before it was set.
    static let formatVersion = 1
    /// The database's file name inside the data directory.
    static let fileName = "feeds.sqlite3"

    /// The database's path.
    let path: String
    private let setAsideDamaged: Bool

    /// - Parameter setAsideDamaged: on damaged data, leave the damaged feeds (or what cannot be read of
    ///   the file) out and go on, instead of refusing.
    init(directory: String, setAsideDamaged: Bool) {
        path = directory + "/" + Self.fileName
        self.setAsideDamaged = setAsideDamaged
    }

    /// Reads every feed with its checks.
    /// - Throws: ``StoreError/damaged(path:reason:)`` when the data cannot be trusted and damage is not
    ///   to be set aside; ``StoreError/directory(path:reason:)`` when the file cannot be opened.
    func load() throws(StoreError) -> StoreContents {
        let database: SQLiteDatabase
        do {
            database = try SQLiteDatabase(path: path)
        } catch {
            throw .directory(path: path, reason: error.description)
        }
        defer { database.close() }
        let reader = Reader(database: database)
        do {
            return try reader.loadChecked()
        } catch let damage {
            guard setAsideDamaged else {
                throw .damaged(path: path, reason: damage.reason + "; start with --set-aside-damaged to keep what can be read and move the rest aside")
            }
            return reader.salvage(after: damage)
        }
    }

    /// Damage found while loading: the whole file (structure, format) or single feeds.
    private struct Damage: Error {
        var reason: String
        var wholeFile: Bool
        var feeds: [(name: String, reason: String)] = []
        /// With damaged feeds: the feeds that can be kept (the sound ones, and the snapshots of those
        /// whose window only is damaged).
        var salvaged: [StoredFeed] = []
    }

    /// The queries over one open connection.
    private struct Reader {
        let database: SQLiteDatabase

        func loadChecked() throws(Damage) -> StoreContents {
            let format: Int
            do {
                try database.execute("PRAGMA busy_timeout=5000")
                format = Int(try database.text("PRAGMA user_version") ?? "0") ?? -1
            } catch {
                throw Damage(reason: "it is not a readable SQLite database (\(error.description))", wholeFile: true)
            }
            if format != 0 && format != SQLiteMigrator.formatVersion {
                throw Damage(reason: "its format version is \(format), and this build reads version \(SQLiteMigrator.formatVersion)", wholeFile: true)
            }
            let check: String
            do { check = try database.text("PRAGMA quick_check") ?? "no answer" } catch { throw Damage(reason: "quick_check failed: \(error.description)", wholeFile: true) }
            guard check == "ok" else { throw Damage(reason: "SQLite's quick_check reports: \(check)", wholeFile: true) }
            let names: [String]
            do {
                // A database of format 0 may be one the store created and never wrote: no tables, no feeds.
                if format == 0, try database.text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'feeds'") == nil {
                    return StoreContents(feeds: [])
                }
                names = try feedNames()
            } catch {
                throw Damage(reason: error.description, wholeFile: true)
            }
            var feeds: [StoredFeed] = []
            var damage = Damage(reason: "", wholeFile: false)
            for name in names {
                do {
                    let (feed, problem) = try readFeed(name)
                    if let problem {
                        damage.feeds.append((name, problem))
                        // A damaged window only: the feed keeps its snapshot, and its clients resync.
                        if var feed {
                            feed.batches = []
                            feeds.append(feed)
                        }
                    } else if let feed {
                        feeds.append(feed)
                    }
                } catch {
                    throw Damage(reason: error.description, wholeFile: true)
                }
            }
            guard damage.feeds.isEmpty else {
                damage.reason = damage.feeds.map { "feed '\($0.name)': \($0.reason)" }.joined(separator: "; ")
                damage.salvaged = feeds
                throw damage
            }
            return StoreContents(feeds: feeds)
        }

        /// What can be read despite `damage`: with damaged feeds, the rest (and the snapshots of those
        /// whose window only is damaged); with a damaged file, every feed that still reads.
        func salvage(after damage: Damage) -> StoreContents {
            var contents = StoreContents(feeds: [])
            guard damage.wholeFile else {
                contents.feeds = damage.salvaged
                contents.setAside = damage.feeds
                return contents
            }
            if let names = try? feedNames() {
                for name in names {
                    if let (feed, problem) = try? readFeed(name), var feed {
                        if problem != nil { feed.batches = [] }
                        contents.feeds.append(feed)
                    } else {
                        contents.setAside.append((name, "unreadable in the damaged file"))
                    }
                }
            }
            contents.setAside.append(("*", "the file is damaged (\(damage.reason)); what could be read of it was kept"))
            return contents
        }

        private func feedNames() throws(SQLiteError) -> [String] {
            let statement = try database.prepare("SELECT name FROM feeds ORDER BY name")
            var names: [String] = []
            while try statement.step() { names.append(statement.text(0) ?? "") }
            return names
        }

        /// One feed with its checks: (feed, nil) when sound; (feed, problem) when only its replay window
        /// is damaged; (nil, problem) when its snapshot or state is.
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
    }
}
