/// The number of members and their bytes, as ``MemberStore`` keeps them in its file's `totals` row.
struct MemberTotals: Sendable, Equatable {
    var members = 0
    var bytes = 0
}

/// ``MemberStore``'s writing connection: opens (creating) the file and its schema, and commits groups
/// of writes, each group in one transaction.
final class MemberWriter: @unchecked Sendable {
    // `@unchecked Sendable`: the connection, its statements and `totals` are used by `init` before the
    // store is shared and afterwards only on the store's serial queue (`commitGroup`, `close`), so no
    // two threads ever touch them at once.

    /// The schema version (`PRAGMA user_version`) this build writes and reads.
    static let formatVersion = 1

    static let schema = """
        CREATE TABLE IF NOT EXISTS members (name TEXT PRIMARY KEY NOT NULL, history TEXT NOT NULL, version INTEGER NOT NULL,
            snapshot BLOB NOT NULL, batches BLOB NOT NULL, view_state BLOB);
        CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), members INTEGER NOT NULL, bytes INTEGER NOT NULL);
        INSERT OR IGNORE INTO totals (id, members, bytes) VALUES (0, 0, 0);
        """

    /// The size the WAL file is cut back to after a checkpoint (`PRAGMA journal_size_limit`).
    static let walSizeLimit = 16 << 20

    let path: String
    let maxBatches: Int
    private var database: SQLiteDatabase?
    private var statements: Statements?
    /// As committed (the `totals` row).
    private(set) var totals = MemberTotals()

    private struct Statements {
        let row: SQLiteStatement
        let upsert: SQLiteStatement
        let setState: SQLiteStatement
        let delete: SQLiteStatement
        let setTotals: SQLiteStatement

        init(_ database: SQLiteDatabase) throws(SQLiteError) {
            row = try database.prepare("SELECT history, version, batches, length(snapshot), length(batches), length(view_state) FROM members WHERE name = ?1")
            upsert = try database.prepare("""
                INSERT INTO members (name, history, version, snapshot, batches, view_state) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT (name) DO UPDATE SET history = excluded.history, version = excluded.version, snapshot = excluded.snapshot,
                    batches = excluded.batches, view_state = coalesce(excluded.view_state, members.view_state)
                """)
            setState = try database.prepare("UPDATE members SET view_state = ?2 WHERE name = ?1")
            delete = try database.prepare("DELETE FROM members WHERE name = ?1")
            setTotals = try database.prepare("UPDATE totals SET members = ?1, bytes = ?2 WHERE id = 0")
        }
    }

    /// Opens the file at `path`, creating it and its schema when missing: WAL, `synchronous=FULL`, a
    /// busy timeout; then checks its schema version and reads the totals row. Reads no member.
    /// - Complexity: O(1) in the number of members.
    /// - Throws: ``StoreError/damaged(path:reason:)`` for a file of an unknown schema version or no
    ///   database; ``StoreError/directory(path:reason:)`` when it cannot be opened.
    init(path: String, maxBatches: Int) throws(StoreError) {
        self.path = path
        self.maxBatches = maxBatches
        let (database, (totals, statements)) = try SQLiteDatabase.openStore(path: path, writable: true) { database in
            try database.execute("PRAGMA busy_timeout=5000")
            // Refused before anything is written to a file of another version (even the journal mode).
            try Self.checkFormat(database, path: path, allowNew: true)
            let mode = try database.text("PRAGMA journal_mode=WAL")
            guard mode?.lowercased() == "wal" else { throw StoreError.io(path: path, reason: "SQLite refused WAL mode (journal_mode is \(mode ?? "unknown"))") }
            try database.execute("PRAGMA synchronous=FULL")
            // After a checkpoint, the WAL file is cut back to this size rather than kept at its largest.
            try database.execute("PRAGMA journal_size_limit=\(Self.walSizeLimit)")
            try database.execute("BEGIN IMMEDIATE")
            do {
                // Checked again inside the transaction: another process may have created the schema since.
                if try Self.checkFormat(database, path: path, allowNew: true) == 0 {
                    try database.execute(Self.schema + "PRAGMA user_version=\(Self.formatVersion);")
                }
                try database.execute("COMMIT")
            } catch {
                try? database.execute("ROLLBACK")
                throw error
            }
            let totalsRow = try database.prepare("SELECT members, bytes FROM totals WHERE id = 0")
            guard try totalsRow.step() else { throw StoreError.damaged(path: path, reason: "its totals row is missing") }
            let totals = MemberTotals(members: totalsRow.integer(0), bytes: totalsRow.integer(1))
            try totalsRow.reset()
            return (totals, try Statements(database))
        }
        self.totals = totals
        self.statements = statements
        self.database = database
    }

    /// The file's schema version: 0 (new, only where `allowNew`) or ``formatVersion``.
    /// - Throws: ``StoreError/damaged(path:reason:)`` for any other.
    @discardableResult
    static func checkFormat(_ database: SQLiteDatabase, path: String, allowNew: Bool) throws -> Int {
        let format = Int(try database.text("PRAGMA user_version") ?? "") ?? -1
        guard format == formatVersion || (format == 0 && allowNew) else {
            throw StoreError.damaged(path: path, reason: "its schema version (PRAGMA user_version) is \(format), and this build reads version \(formatVersion) of the member store")
        }
        return format
    }

    /// Closes the connection; commits after this fail.
    func close() {
        statements = nil
        database?.close()
        database = nil
    }

    /// Every member starts a new history with an empty window, in one transaction (a start on a
    /// restored backup, ``RestoreMarker``); the totals' bytes follow the emptied windows.
    /// - Returns: the number of members.
    /// - Complexity: O(n) row updates, one fsync.
    func restartHistories(_ newHistory: () -> String) throws(StoreError) -> Int {
        guard let database else { throw .io(path: path, reason: "the member store is closed") }
        do throws(SQLiteError) {
            try database.execute("BEGIN IMMEDIATE")
            do throws(SQLiteError) {
                let select = try database.prepare("SELECT name FROM members")
                var names: [String] = []
                while try select.step() { names.append(select.text(0) ?? "") }
                let update = try database.prepare("UPDATE members SET history = ?2, batches = ?3 WHERE name = ?1")
                for name in names { try update.run([.text(name), .text(newHistory()), .blob(MemberWindow.encode([]))]) }
                try database.execute("""
                    UPDATE totals SET members = (SELECT count(*) FROM members),
                        bytes = (SELECT coalesce(sum(length(snapshot) + length(batches) + coalesce(length(view_state), 0)), 0) FROM members) WHERE id = 0
                    """)
                let totalsRow = try database.prepare("SELECT members, bytes FROM totals WHERE id = 0")
                let next = try totalsRow.step() ? MemberTotals(members: totalsRow.integer(0), bytes: totalsRow.integer(1)) : MemberTotals()
                try totalsRow.reset()
                try database.execute("COMMIT")
                totals = next
                return names.count
            } catch {
                try? database.execute("ROLLBACK")
                throw error
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Commits `writes` in one transaction (one fsync); when that fails and there were several, each
    /// in a transaction of its own, so one write that does not fit on a nearly full disk does not fail
    /// the others. One result per write: whether its member existed before it.
    /// - Complexity: O(the bytes written), plus a B-tree lookup per write.
    func commitGroup(_ writes: [FeedWrite]) -> [Result<Bool, StoreError>] {
        switch transaction(writes) {
        case .success(let existed): return existed.map { .success($0) }
        case .failure(let error) where writes.count == 1: return [.failure(error)]
        case .failure: return writes.map { write in transaction([write]).map { $0[0] } }
        }
    }

    private func transaction(_ writes: [FeedWrite]) -> Result<[Bool], StoreError> {
        guard let database, let statements else { return .failure(.io(path: path, reason: "the member store is closed")) }
        var next = totals
        do throws(SQLiteError) {
            try database.execute("BEGIN IMMEDIATE")
            var existed: [Bool] = []
            existed.reserveCapacity(writes.count)
            for write in writes { existed.append(try apply(write, statements, &next)) }
            try statements.setTotals.run([.integer(next.members), .integer(next.bytes)])
            try database.execute("COMMIT")
            totals = next
            return .success(existed)
        } catch {
            try? database.execute("ROLLBACK")
            return .failure(StoreError(error, path: path))
        }
    }

    /// Applies one write inside the open transaction, changing `totals` by it; whether the member existed.
    private func apply(_ write: FeedWrite, _ statements: Statements, _ totals: inout MemberTotals) throws(SQLiteError) -> Bool {
        let name = write.feed
        let row = statements.row
        try row.reset([.text(name)])
        var stored: (history: String, version: Int, batches: [StoredBatch])?
        var oldBytes = 0, oldStateBytes = 0
        if try row.step() {
            // A window that cannot be read is dropped: the member's clients resync from its snapshot.
            stored = (row.text(0) ?? "", row.integer(1), MemberWindow.decode(row.blob(2)) ?? [])
            oldStateBytes = row.integer(5)
            oldBytes = row.integer(3) + row.integer(4) + oldStateBytes
        }
        try row.reset()
        switch write {
        case .put(_, let history, let version, let snapshot, let batch, let keepFrom, let viewState):
            let batches = MemberWindow.encode(MemberWindow.afterPut(stored: stored, history: history, version: version, batch: batch, keepFrom: keepFrom, maxBatches: maxBatches))
            try statements.upsert.run([.text(name), .text(history), .integer(version), .blob(snapshot), .blob(batches), viewState.map { .blob($0) } ?? .null])
            totals.members += stored == nil ? 1 : 0
            totals.bytes += snapshot.count + batches.count + (viewState?.count ?? oldStateBytes) - oldBytes
        case .viewState(_, let bytes):
            guard stored != nil else { break }  // as for the other stores: no member, nothing to change
            try statements.setState.run([.text(name), .blob(bytes)])
            totals.bytes += bytes.count - oldStateBytes
        case .delete:
            guard stored != nil else { break }
            try statements.delete.run([.text(name)])
            totals.members -= 1
            totals.bytes -= oldBytes
        }
        return stored != nil
    }
}
