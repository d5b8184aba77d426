/// ``MemberStore``'s reading connection: one member by name, and names by prefix. WAL lets it read
/// while the writing connection commits, so a read never waits for a commit's fsync. Not thread-safe:
/// the store keeps it behind a `Mutex`.
final class MemberReader {
    let path: String
    private let database: SQLiteDatabase
    private let row: SQLiteStatement
    private let names: SQLiteStatement

    /// Opens the file ``MemberWriter`` made (read-only) and checks its schema version.
    /// - Complexity: O(1) in the number of members.
    init(path: String) throws(StoreError) {
        self.path = path
        let (database, statements) = try SQLiteDatabase.openStore(path: path, writable: false) { database in
            try database.execute("PRAGMA busy_timeout=5000")
            try MemberWriter.checkFormat(database, path: path, allowNew: false)
            return (try database.prepare("SELECT history, version, snapshot, batches, view_state FROM members WHERE name = ?1"),
                    try database.prepare("SELECT name FROM members WHERE name >= ?1 AND name < ?2 ORDER BY name LIMIT ?3"))
        }
        self.database = database
        row = statements.0
        names = statements.1
    }

    /// Closes the connection (its statements are finalized with it).
    func close() {
        database.close()
    }

    /// The member `name` as last committed, or nil.
    /// - Complexity: one B-tree lookup, O(log n), plus O(the member's bytes).
    func read(_ name: String) throws(StoreError) -> StoredFeed? {
        defer { try? row.reset() }  // ends the read transaction, so checkpoints are not held back
        let feed: StoredFeed
        let window: [UInt8]
        do throws(SQLiteError) {
            try row.reset([.text(name)])
            guard try row.step() else { return nil }
            feed = StoredFeed(name: name, history: row.text(0) ?? "", version: row.integer(1), snapshot: row.blob(2), batches: [],
                              viewState: row.isNull(4) ? nil : row.blob(4))
            window = row.blob(3)
        } catch {
            throw StoreError(error, path: path)
        }
        guard let batches = MemberWindow.decode(window) else {
            throw .damaged(path: path, reason: "the replay window of member '\(name)' cannot be read")
        }
        var member = feed
        member.batches = batches
        return member
    }

    /// Up to `limit` names that start with `prefix`, in order (byte order of their UTF-8).
    /// - Complexity: O(log n + limit): a range of the primary key's index.
    func names(withPrefix prefix: String, limit: Int) throws(StoreError) -> [String] {
        defer { try? names.reset() }
        do throws(SQLiteError) {
            // Every name with the prefix sorts below the prefix followed by the greatest code point.
            try names.reset([.text(prefix), .text(prefix + "\u{10FFFF}"), .integer(max(0, limit))])
            var found: [String] = []
            while try names.step() { found.append(names.text(0) ?? "") }
            return found
        } catch {
            throw StoreError(error, path: path)
        }
    }
}
