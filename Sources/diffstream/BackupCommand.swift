import ArgumentParser
import FeedStorage
import Foundation

/// `diffstream backup DEST`: a consistent copy of the store while the server runs.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copies a consistent backup of the durable store into a new directory, while the server runs.",
        discussion: "The store is the one of --data (before or after 'backup') or DIFFSTREAM_DATA, ./data by default: the log's files and the family members' store (members/members.sqlite3). The copy is checked by reading it back, and marked (\(RestoreMarker.fileName)): a server started on it gives every feed and member a new history, so clients holding ids written after the backup resync with a snapshot. To restore, stop the server, then 'diffstream restore --data DIR BACKUP' (or start it with --data pointing at the copy). Example: diffstream backup --data /data /backups/feeds-$(date +%F)")

    @Argument(help: "The directory to copy into (created; it must not hold store files).") var destination: String
    /// The server's options: `--data` is the server's own.
    @ParentCommand var server: DiffStreamCommand

    func run() throws {
        let source = server.dataDirectory
        guard source != "none" else { throw ConfigurationError(message: "--data none: there is no store to back up") }
        do {
            let copied = try LogFeedStore.backup(from: source, to: destination)
            print("backed up \(copied.feeds) feeds and \(copied.members ?? 0) family members from \(source) to \(destination) (\(copied.files) files, \(copied.bytes) bytes)")
        } catch {
            throw ConfigurationError(message: error.description)
        }
    }
}

extension DiffStreamCommand {
    /// `--data`, else `DIFFSTREAM_DATA`, else `./data`: the directory `backup` and `restore` work on.
    var dataDirectory: String {
        data ?? ProcessInfo.processInfo.environment["DIFFSTREAM_DATA"] ?? "./data"
    }
}
