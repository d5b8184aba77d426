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
