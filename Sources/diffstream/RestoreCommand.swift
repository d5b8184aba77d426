import ArgumentParser
import DiffStreamRedis
import FeedStorage
import Foundation

/// `diffstream restore BACKUP`: puts a backup in place as the data directory, marked so that the next
/// start takes new histories; `diffstream restore --in-place DIR` marks a copy made by hand;
/// `diffstream restore --redis URL`, after Redis was put back from an older RDB or AOF, gives every
/// feed kept there a new history.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Puts a backup in place as the data directory; the next start gives every feed and member a new history.",
        discussion: "Copies BACKUP (made by 'diffstream backup', or any stopped server's data directory) into the directory of --data (or DIFFSTREAM_DATA, ./data by default), which must be new or hold no store files: move the old one aside first. The copy is checked by reading it back and marked (\(RestoreMarker.fileName)). The next server started on it gives every feed and family member a new history (a client's id from before names another history and gets a snapshot, never batches of states it never had), then removes the mark. With --in-place, BACKUP is a copy already in place, made by hand (cp -r, a disk snapshot): it is only marked. Refused while a server runs on the directory. Example: mv /data /data.old && diffstream restore --data /data /backups/feeds-2024-05-01. With --redis (or DIFFSTREAM_REDIS) and no BACKUP: run it once Redis was put back from an older RDB or AOF (it has no backup of ours to copy); every feed and family member kept in Redis under --redis-prefix starts a new history at once, also while instances run (their subscribers resync with a snapshot). Example: diffstream restore --redis redis://redis:6379")

    @Argument(help: "The backup to restore (with --in-place: the copy, already in place, to mark). None with --redis.") var backup: String?
    @Flag(name: .customLong("in-place"), help: "Only mark BACKUP, a copy made by hand and already in place, so the next start takes new histories.") var inPlace = false
    /// The server's options: `--data` is the server's own.
    @ParentCommand var server: DiffStreamCommand

    func run() async throws {
        if let redis = server.redis ?? ProcessInfo.processInfo.environment["DIFFSTREAM_REDIS"] {
            guard backup == nil, !inPlace else {
                throw ConfigurationError(message: "--redis: Redis is put back from its own RDB or AOF, not from BACKUP; restore that first, then run 'diffstream restore --redis URL' alone")
            }
            let prefix = server.redisPrefix ?? ProcessInfo.processInfo.environment["DIFFSTREAM_REDIS_PREFIX"] ?? "diffstream"
            do {
                let feeds = try await RedisSharing(url: redis, prefix: prefix).startNewHistories()
                print("\(feeds) feeds and family members in Redis under '\(prefix)' start a new history: clients holding ids from before get a snapshot")
            } catch {
                throw ConfigurationError(message: error.description, suggestsHelp: false)
            }
            return
        }
        guard let backup else { throw ConfigurationError(message: "name the BACKUP to restore (or --redis URL after restoring Redis from an RDB or AOF)") }
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
