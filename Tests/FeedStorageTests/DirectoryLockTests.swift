import Foundation
import Testing
@testable import FeedStorage

struct DirectoryLockTests {
    /// The directory whose fsync makes a created directory's name durable.
    @Test(arguments: [
        ("/var/lib/diffstream", "/var/lib"), ("/var/lib/diffstream/", "/var/lib"), ("/data", "/"), ("/data//", "/"),
        ("./data", "."), ("data", "."), ("data/", "."), ("a/b/c", "a/b"),
    ])
    func parentOf(path: String, parent: String) {
        #expect(DirectoryLock.parent(of: path) == parent)
    }

    /// A data directory named with a trailing slash, under parents that did not exist, is made (each
    /// parent too) and locked.
    @Test func nestedDirectoriesAreMadeAndLocked() throws {
        let root = NSTemporaryDirectory() + "diffstream-lock-tests-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        let lock = try DirectoryLock(directory: root + "/a/b/")
        #expect(FileManager.default.fileExists(atPath: root + "/a/b/" + DirectoryLock.fileName))
        #expect(throws: StoreError.locked(path: root + "/a/b/")) { try DirectoryLock(directory: root + "/a/b/") }
        lock.release()
    }
}
