import ArgumentParser
import FeedStorage
import Foundation

/// `diffstream restore BACKUP`: puts a backup in place as the data directory, marked so that the next
/// start takes new histories; `diffstream restore --in-place DIR` marks a copy made by hand.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Puts a backup in place as the data directory; the next start gives every feed and member a new history.",
        discussion: "Copies BACKUP (made by 'diffstream backup', or any stopped server's data directory) into the directory of --data (or DIFFSTREAM_DATA, ./data by default), which must be new or hold no store files: move the old one aside first. The copy is checked by reading it back and marked (\(RestoreMarker.fileName)). The next server started on it gives every feed and family member a new history (a client's id from before names another history and gets a snapshot, never batches of states it never had), then removes the mark. With --in-place, BACKUP is a copy already in place, made by hand (cp -r, a disk snapshot): it is only marked. Refused while a server runs on the directory. Example: mv /data /data.old && diffstream restore --data /data /backups/feeds-2024-05-01")

    @Argument(help: "The backup to restore (with --in-place: the copy, already in place, to mark).") var backup: String
    @Flag(name: .customLong("in-place"), help: "Only mark BACKUP, a copy made by hand and already in place, so the next start takes new histories.") var inPlace = false
    /// The server's options: `--data` is the server's own.
    @ParentCommand var server: DiffStreamCommand

    func run() throws {
        do {
            if inPlace {
                try LogFeedStore.markRestored(backup)
                print("marked \(backup) as restored: the next start gives every feed and family member a new history")
                return
            }
            let data = server.dataDirectory
            guard data != "none" else { throw ConfigurationError(message: "--data none: there is no data directory to restore into") }
            let copied = try LogFeedStore.backup(from: backup, to: data)
            print("restored \(copied.feeds) feeds and \(copied.members ?? 0) family members from \(backup) to \(data) (\(copied.files) files, \(copied.bytes) bytes); the next start gives each a new history")
        } catch let error as StoreError {
            throw ConfigurationError(message: error.description)
        }
    }
}
