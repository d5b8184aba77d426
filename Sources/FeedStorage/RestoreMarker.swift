#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Restores are explicit (issue 51): a (history, version) pair names one state, forever, so a store put
/// back from a backup must not go on writing the histories it had. A backup made by
/// `diffstream backup` (``LogFeedStore/backup(from:to:)``) and a directory made ready by
/// `diffstream restore` carry this file; the next start takes a new history for every feed and every
/// family member (a client's id from before names another history and gets a snapshot, never batches),
/// then removes the file durably, so a later plain restart keeps the new histories.
///
/// A file, not a field of a store file: no format changes, an older binary ignores it (docs/upgrading.md),
/// and an operator sees it with `ls`.
public enum RestoreMarker {
    /// The marker's name in the data directory.
    public static let fileName = "RESTORED-FROM-BACKUP"

    /// What the marker says to whoever opens it.
    static func text(from source: String) -> [UInt8] {
        Array("""
            This directory is a copy of the diffstream store in '\(source)'.
            The next diffstream started on it gives every feed and family member a new history (clients
            resync with a snapshot, never with batches of the states written after the copy), then removes
            this file. See docs/operations.md, "Backups and restores".

            """.utf8)
    }

    /// Writes the marker into `directory`, durable with its name.
    static func write(in directory: String, from source: String, files: any StoreFiles) throws(StoreError) {
        let path = directory + "/" + fileName
        do throws(FileError) {
            let descriptor = try files.open(path, O_WRONLY | O_CREAT | O_TRUNC)
            defer { files.close(descriptor) }
            try files.write(descriptor, text(from: source), at: 0, path: path)
            try files.sync(descriptor, path: path)
            try files.syncDirectory(directory)
        } catch {
            throw .directory(path: directory, reason: "writing \(fileName): \(error.description)")
        }
    }

    /// Removes the marker from `directory`, durably: once this returns, a start no longer takes new histories.
    static func remove(from directory: String, files: any StoreFiles) throws(StoreError) {
        do throws(FileError) {
            try files.remove(directory + "/" + fileName)
            try files.syncDirectory(directory)
        } catch {
            throw .directory(path: directory, reason: "removing \(fileName) after taking new histories: \(error.description); start again (the histories are taken again)")
        }
    }
}
