#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The member store in backups and restores (issue 51): copied while the server writes it, checked by
/// reading it back, and its histories renewed when a restored copy starts.
extension MemberStore {
    /// The directory of the data directory the server keeps the member store in (`DATA/members/`).
    public static let directoryName = "members"

    /// The member store's file in the data directory `data`.
    static func file(inData data: String) -> String {
        data + "/" + directoryName + "/" + fileName
    }

    /// Copies the member store of the data directory `data` into the data directory `destination`
    /// (`members/members.sqlite3`), as one moment of it, while a server may be committing to it.
    ///
    /// `VACUUM INTO` on a read-only connection of its own: one read transaction, which in WAL mode
    /// sees the last commit and never waits for (nor holds back) the server's writes, and needs no lock
    /// of the server's (the directory's `flock` is not taken). The copy is a new file in rollback-journal
    /// mode (the server puts it back in WAL mode when it opens it); it is `fdatasync`ed with its
    /// directory, then read back (``check(path:)``).
    /// - Returns: the members copied, or nil when `data` holds no member store.
    /// - Throws: ``StoreError`` naming the file that failed.
    static func backup(fromData data: String, toData destination: String, files: any StoreFiles) throws(StoreError) -> Int? {
        let source = file(inData: data)
        guard files.size(source) != nil else { return nil }
        let directory = destination + "/" + directoryName
        let copy = directory + "/" + fileName
        do {
            for made in try files.createDirectory(directory) { try files.syncDirectory(DirectoryLock.parent(of: made)) }
        } catch {
            throw .directory(path: directory, reason: "cannot create it (\(error.description))")
        }
        let (database, _) = try SQLiteDatabase.openStore(path: source, writable: false) { database in
            try database.execute("PRAGMA busy_timeout=5000")
            try MemberWriter.checkFormat(database, path: source, allowNew: false)
        }
        defer { database.close() }
        do {
            try database.execute("VACUUM INTO '\(copy.replacingAll("'", with: "''"))'")
        } catch {
            throw .io(path: copy, reason: "copying \(source): \(error.description)")
        }
        do {
            try files.sync(path: copy)
            try files.syncDirectory(directory)
        } catch {
            throw .io(path: copy, reason: error.description)
        }
        return try check(path: copy)
    }

    /// Reads a member store back whole: SQLite's `integrity_check`, every member read and its window
    /// decoded, and their number equal to the `totals` row's.
    /// - Returns: the number of members.
    /// - Throws: ``StoreError/damaged(path:reason:)`` when any of it fails.
    /// - Complexity: O(the file's size).
    static func check(path: String) throws(StoreError) -> Int {
        let (database, counted) = try SQLiteDatabase.openStore(path: path, writable: false) { database in
            let integrity = try database.text("PRAGMA integrity_check") ?? ""
            guard integrity == "ok" else { throw StoreError.damaged(path: path, reason: "integrity_check: \(integrity)") }
            return Int(try database.text("SELECT members FROM totals WHERE id = 0") ?? "") ?? -1
        }
        database.close()
        let reader = try MemberReader(path: path)
        defer { reader.close() }
        let names = try reader.names(withPrefix: "", limit: Int.max)
        for name in names {
            guard try reader.read(name) != nil else { throw .damaged(path: path, reason: "member '\(name)' is listed but cannot be read") }
        }
        guard names.count == counted else {
            throw .damaged(path: path, reason: "it holds \(names.count) members and its totals row says \(counted)")
        }
        return names.count
    }

    /// Gives every member kept in the data directory `data` a new history with an empty window, durably
    /// (a start on a restored backup, ``RestoreMarker``).
    /// - Returns: the number of members (0 when there is no member store).
    static func restartHistories(inData data: String, files: any StoreFiles) throws(StoreError) -> Int {
        let path = file(inData: data)
        guard files.size(path) != nil else { return 0 }
        let writer = try MemberWriter(path: path, maxBatches: defaultMaxBatches)
        defer { writer.close() }
        return try writer.restartHistories(RandomID.history)
    }
}

extension String {
    /// `self` with every `target` replaced (Foundation-free, for SQL string literals).
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self { if character == target { result += replacement } else { result.append(character) } }
        return result
    }
}
