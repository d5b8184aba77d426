#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LogFeedStore {
    /// Copies a consistent backup of the store in `directory`, which a running server may be writing,
    /// into `destination` (created; it must not hold store files already).
    ///
    /// Consistent because checkpoints never change once in place and logs only gain whole groups, each
    /// written after the last: the newest checkpoint is copied, then its logs in order, so each later
    /// file is a later moment. The newest log may end inside a group being written; that part is a
    /// torn tail, cut off when the copy is opened to check it. Its preallocated zeros are copied too
    /// (free space, at most 256 KiB a log). When a compaction removes a file before it is copied, the copy
    /// starts again. The copy is then loaded once, which checks every CRC.
    /// - Returns: the files and bytes copied, and the feeds in the backup.
    /// - Throws: ``StoreError`` naming the path that failed.
    public static func backup(from directory: String, to destination: String) throws(StoreError) -> (files: Int, bytes: Int, feeds: Int) {
        try backup(from: directory, to: destination, files: SystemStoreFiles())
    }

    static func backup(from directory: String, to destination: String, files: any StoreFiles) throws(StoreError) -> (files: Int, bytes: Int, feeds: Int) {
        do {
            try files.createDirectory(destination)
        } catch {
            throw .directory(path: destination, reason: "cannot create it (\(error.description))")
        }
        func names(_ path: String) throws(StoreError) -> [String] {
            do { return try files.list(path) } catch { throw .directory(path: path, reason: error.description) }
        }
        guard try names(destination).allSatisfy({ parse($0) == nil && $0 != SQLiteMigrator.fileName }) else {
            throw .directory(path: destination, reason: "it already holds store files; back up into a new or empty directory")
        }
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
            let check = try LogFeedStore(directory: destination, files: files)
            defer { check.close() }
            let contents = try check.load()
            return (wanted.count, bytes, contents.feeds.count)
        }
        throw .io(path: directory, reason: "its files changed under 20 copies in a row (a compaction each time); try again")
    }
}
