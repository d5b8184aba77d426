import CSQLite

/// A failed SQLite call: its name, the result code and SQLite's message.
struct SQLiteError: Error, CustomStringConvertible {
    var call: String
    var code: Int32
    var message: String
    var description: String { "\(call): \(message) (SQLite code \(code))" }
}

/// A thin wrapper over one `sqlite3` connection. Not thread-safe: one owner uses it.
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String

    /// Opens the database at `path`: read-only (``SQLiteMigrator``), or, with `writable`, for reading and
    /// writing, created if missing (the tests, to build databases of earlier versions).
    init(path: String, writable: Bool = false) throws(SQLiteError) {
        self.path = path
        var db: OpaquePointer?
        let mode = writable ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY
        let code = sqlite3_open_v2(path, &db, mode | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw SQLiteError(call: "sqlite3_open_v2", code: code, message: message)
        }
        sqlite3_extended_result_codes(db, 1)
        handle = db
    }

    deinit { sqlite3_close_v2(handle) }

    /// Closes the connection now (statements still alive are finalized by their owners; `close_v2` waits).
    func close() {
        sqlite3_close_v2(handle)
        handle = nil
    }

    func error(_ call: String, _ code: Int32) -> SQLiteError {
        SQLiteError(call: call, code: code, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs statements without results (`sqlite3_exec`).
    func execute(_ sql: String) throws(SQLiteError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error("sqlite3_exec(\(sql.prefix(40)))", code) }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error("sqlite3_prepare_v3(\(sql.prefix(40)))", code) }
        return SQLiteStatement(statement, database: self)
    }

    /// The first column of the first row of a query, as text (nil when there is no row).
    func text(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }
}

/// A prepared statement; reset before each use.
final class SQLiteStatement {
    private let statement: OpaquePointer
    private let database: SQLiteDatabase

    init(_ statement: OpaquePointer, database: SQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    /// Clears bindings and state; binds `values` to ?1, ?2, …
    func reset(_ values: [SQLiteValue] = []) throws(SQLiteError) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .integer(let number): code = sqlite3_bind_int64(statement, index, Int64(number))
            case .text(let text): code = sqlite3_bind_text(statement, index, text, -1, diffstream_sqlite_transient())
            case .blob(let bytes): code = bytes.withUnsafeBytes { sqlite3_bind_blob64(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64($0.count), diffstream_sqlite_transient()) }
            case .null: code = sqlite3_bind_null(statement, index)
            }
            guard code == SQLITE_OK else { throw database.error("sqlite3_bind", code) }
        }
    }

    /// One step: true when a row is ready, false when done.
    @discardableResult
    func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(statement)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        throw database.error("sqlite3_step", code)
    }

    /// Binds and runs to completion.
    func run(_ values: [SQLiteValue]) throws(SQLiteError) {
        try reset(values)
        while try step() {}
        sqlite3_reset(statement)
    }

    func integer(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: pointer)
    }
    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

enum SQLiteValue {
    case integer(Int)
    case text(String)
    case blob([UInt8])
    case null
}
