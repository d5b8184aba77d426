import CSQLite

extension StoreError {
    /// A failed SQLite call of a store kept in the file at `path`, as the store's error: a full disk
    /// (`SQLITE_FULL`) is ``full(path:)``, a file that is not a database or is corrupt
    /// (`SQLITE_NOTADB`, `SQLITE_CORRUPT`) ``damaged(path:reason:)``, anything else ``io(path:reason:)``.
    /// The reason keeps the call's name, SQLite's message and its (extended) result code.
    init(_ error: SQLiteError, path: String) {
        switch error.code & 0xFF {
        case SQLITE_FULL: self = .full(path: path)
        case SQLITE_NOTADB, SQLITE_CORRUPT: self = .damaged(path: path, reason: error.description)
        default: self = .io(path: path, reason: error.description)
        }
    }
}

extension SQLiteDatabase {
    /// Opens the SQLite file of a store at `path` and sets the connection up with `setUp` (pragmas, the
    /// schema check, statements), as the store's errors: a file that cannot be opened is
    /// ``StoreError/directory(path:reason:)``, a failed SQLite call ``StoreError/init(_:path:)``'s error, a
    /// ``StoreError`` thrown by `setUp` itself, and anything else ``StoreError/io(path:reason:)``. The
    /// connection is closed on any failure.
    /// - Returns: the open connection and what `setUp` made.
    static func openStore<Prepared>(path: String, writable: Bool, _ setUp: (SQLiteDatabase) throws -> Prepared) throws(StoreError) -> (SQLiteDatabase, Prepared) {
        let database: SQLiteDatabase
        do { database = try SQLiteDatabase(path: path, writable: writable) } catch { throw .directory(path: path, reason: error.description) }
        do {
            return (database, try setUp(database))
        } catch {
            database.close()
            switch error {
            case let error as StoreError: throw error
            case let error as SQLiteError: throw StoreError(error, path: path)
            default: throw .io(path: path, reason: "\(error)")
            }
        }
    }
}
