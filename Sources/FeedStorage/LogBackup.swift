#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``LogFeedStore/backup(from:to:)`` copied.
public struct StoreBackup: Sendable, Equatable {
    /// The log's files copied.
    public var files: Int
    /// The bytes of the log's files copied.
    public var bytes: Int
    /// The feeds in the copy, as it loads.
    public var feeds: Int
    /// The family members in the copy's member store, read back; nil when there is none.
    public var members: Int?
}

extension LogFeedStore {
    /// Copies a consistent backup of the store in `directory`, which a running server may be writing,
    /// into `destination` (created; it must not hold store files already): the log's files and the
    /// family members' store (`members/members.sqlite3`), everything a restore needs, marked as a copy
    /// (``RestoreMarker``), so a server started on it takes new histories.
    ///
    /// The log's copy is consistent because checkpoints never change once in place and logs only gain
    /// whole groups, each written after the last: the newest checkpoint is copied, then its logs in order,
    /// so each later file is a later moment. The newest log may end inside a group being written; that
    /// part is a torn tail, cut off when the copy is opened to check it. Its preallocated zeros are copied
    /// too (free space, at most 256 KiB a log). When a compaction removes a file before it is copied, the
    /// copy starts again. The copy is then loaded once, which checks every CRC. The member store is copied
    /// as one moment of its own (``MemberStore/backup(fromData:toData:files:)``: SQLite's `VACUUM INTO`,
    /// which takes no lock of the server's) and read back whole. The two are independent stores: a member
    /// is never in the log, so each copy being one moment is all a restore needs.
    ///
    /// The marker is written first, so no copy of this function's is ever left unmarked, even one cut short.
    /// - Returns: the files and bytes copied, the feeds and members in the backup.
    /// - Throws: ``StoreError`` naming the path that failed.
    public static func backup(from directory: String, to destination: String) throws(StoreError) -> StoreBackup {
        try backup(from: directory, to: destination, files: SystemStoreFiles())
    }

    /// Makes `directory`, a copy of a store made by hand (`cp -r` of a stopped server's directory, a
    /// disk snapshot), safe to start on: marks it (``RestoreMarker``), so the next start takes new
    /// histories. Refused while a server holds the directory.
    /// - Throws: ``StoreError/locked(path:)`` while a server runs on it; ``StoreError/directory(path:reason:)``
    ///   when it holds no store files or the marker cannot be written.
    public static func markRestored(_ directory: String) throws(StoreError) {
        let files = SystemStoreFiles()
        let names: [String]
        do { names = try files.list(directory) } catch { throw .directory(path: directory, reason: error.description) }
        guard names.contains(where: { parse($0) != nil }) || files.size(MemberStore.file(inData: directory)) != nil else {
            throw .directory(path: directory, reason: "it holds no store files (feeds-*.log)")
        }
        let lock = try DirectoryLock(directory: directory, files: files)
        defer { lock.release() }
        try RestoreMarker.write(in: directory, from: directory, files: files)
    }

    static func backup(from directory: String, to destination: String, files: any StoreFiles) throws(StoreError) -> StoreBackup {
        do {
            // Each name it made durable in its parent, as the data directory's own (a restore's is one).
            for made in try files.createDirectory(destination) { try files.syncDirectory(DirectoryLock.parent(of: made)) }
        } catch {
            throw .directory(path: destination, reason: "cannot create it (\(error.description))")
        }
        func names(_ path: String) throws(StoreError) -> [String] {
            do { return try files.list(path) } catch { throw .directory(path: path, reason: error.description) }
        }
        guard try names(destination).allSatisfy({ parse($0) == nil && $0 != SQLiteMigrator.fileName }),
              files.size(MemberStore.file(inData: destination)) == nil else {
            throw .directory(path: destination, reason: "it already holds store files; copy into a new or empty directory")
        }
        try RestoreMarker.write(in: destination, from: directory, files: files)
        for _ in 0..<20 {
            let found = try names(directory).compactMap(parse)
            let base = found.filter { $0.kind == .checkpoint }.map(\.generation).max() ?? 0
            let wanted = (base > 0 ? [(base, LogFormat.FileKind.checkpoint)] : [])
                + found.filter { $0.kind == .log && $0.generation >= max(base, 1) }.map(\.generation).sorted().map { ($0, LogFormat.FileKind.log) }
            guard !wanted.isEmpty else { throw .directory(path: directory, reason: "it holds no store files (feeds-*.log)") }
            var bytes = 0
            var complete = true
            for (generation, kind) in wanted {
                let name = fileName(generation, kind)
                let contents: [UInt8]
                do {
                    contents = try files.read(directory + "/" + name)
                } catch where error.code == ENOENT {
                    complete = false  // a compaction removed it: start again from the new checkpoint
                    break
                } catch {
                    throw .io(path: directory + "/" + name, reason: error.description)
                }
                do {
                    let descriptor = try files.open(destination + "/" + name, O_WRONLY | O_CREAT | O_TRUNC)
                    defer { files.close(descriptor) }
                    try files.write(descriptor, contents, at: 0, path: destination + "/" + name)
                    try files.sync(descriptor, path: destination + "/" + name)
                } catch {
                    throw error.storeError(directory: destination)
                }
                bytes += contents.count
            }
            if !complete {
                for name in try names(destination) where parse(name) != nil { try? files.remove(destination + "/" + name) }
                continue
            }
            do { try files.syncDirectory(destination) } catch { throw .directory(path: destination, reason: error.description) }
            let check = try LogFeedStore(directory: destination, files: files, readsBackup: true)
            defer { check.close() }
            let contents = try check.load()
            let members = try MemberStore.backup(fromData: directory, toData: destination, files: files)
            return StoreBackup(files: wanted.count, bytes: bytes, feeds: contents.feeds.count, members: members)
        }
        throw .io(path: directory, reason: "its files changed under 20 copies in a row (a compaction each time); try again")
    }
}
