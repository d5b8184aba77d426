import ArgumentParser
import FeedStorage
import Foundation

/// `diffstream backup DEST`: a consistent copy of the store while the server runs.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copies a consistent backup of the durable store into a new directory, while the server runs.",
        discussion: "The store is the one of --data (before or after 'backup') or DIFFSTREAM_DATA, ./data by default. The copy is checked by reading it back. To restore, stop the server and start it with --data pointing at the copy (or copy it in place of the old directory). Example: diffstream backup --data /data /backups/feeds-$(date +%F)")

    @Argument(help: "The directory to copy into (created; it must not hold store files).") var destination: String
    /// The server's options: `--data` is the server's own.
    @ParentCommand var server: DiffStreamCommand

    func run() throws {
        let source = server.data ?? ProcessInfo.processInfo.environment["DIFFSTREAM_DATA"] ?? "./data"
        guard source != "none" else { throw ConfigurationError(message: "--data none: there is no store to back up") }
        do {
            let copied = try LogFeedStore.backup(from: source, to: destination)
            print("backed up \(copied.feeds) feeds from \(source) to \(destination) (\(copied.files) files, \(copied.bytes) bytes)")
        } catch {
            throw ConfigurationError(message: error.description)
        }
    }
}
