import Foundation
import Testing
@testable import FeedStorage

/// `SQLiteDatabase.openStore`: the one place a store's SQLite file is opened and set up, with every
/// failure as the store's error.
struct SQLiteDatabaseTests {
    struct Other: Error {}

    /// What `setUp` throws, and the store's error it becomes.
    static let failures: [(thrown: any Error & Sendable, kind: String)] = [
        (SQLiteError(call: "sqlite3_exec", code: 13, message: "full"), "full"),
        (SQLiteError(call: "sqlite3_exec", code: 26, message: "not a database"), "damaged"),
        (SQLiteError(call: "sqlite3_exec", code: 5, message: "locked"), "io"),
        (StoreError.damaged(path: "/x", reason: "its schema version is 9"), "damaged as thrown"),
        (Other(), "io"),
    ]

    @Test(arguments: failures)
    func aFailedSetUpIsTheStoresError(thrown: any Error & Sendable, kind: String) throws {
        let path = NSTemporaryDirectory() + "diffstream-sqlite-\(UUID().uuidString).sqlite3"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = #expect(throws: StoreError.self) {
            _ = try SQLiteDatabase.openStore(path: path, writable: true) { _ in throw thrown }
        }
        switch (error, kind) {
        case (.full(let at)?, "full"): #expect(at == path)
        case (.damaged(let at, let reason)?, "damaged"): #expect(at == path && reason.contains("SQLite code 26"))
        case (.damaged(let at, let reason)?, "damaged as thrown"): #expect(at == "/x" && reason == "its schema version is 9")
        case (.io(let at, _)?, "io"): #expect(at == path)
        default: Issue.record("\(kind): \(String(describing: error))")
        }
    }

    @Test func aFileThatCannotBeOpenedIsADirectoryError() {
        let path = NSTemporaryDirectory() + "diffstream-missing-\(UUID().uuidString)/store.sqlite3"
        let error = #expect(throws: StoreError.self) {
            _ = try SQLiteDatabase.openStore(path: path, writable: true) { _ in () }
        }
        guard case .directory(let at, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(at == path && reason.contains("sqlite3_open_v2"))
    }

    @Test func aSuccessfulSetUpReturnsTheConnectionAndWhatItMade() throws {
        let path = NSTemporaryDirectory() + "diffstream-sqlite-\(UUID().uuidString).sqlite3"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (database, version) = try SQLiteDatabase.openStore(path: path, writable: true) { database in
            try database.execute("PRAGMA user_version=3")
            return try database.text("PRAGMA user_version")
        }
        #expect(version == "3")
        #expect(try database.text("SELECT 1 + 1") == "2")
        database.close()
    }
}
