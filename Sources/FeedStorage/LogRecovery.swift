import Foundation
import Timekeeping
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading the files back at start (``LogFeedStore/load()``): the newest checkpoint, then the logs
/// from its generation on; a torn tail cut off; damage refused, or set aside when asked to.
extension LogFeedStore {
    /// Damage found while loading.
    struct Damage {
        var path: String
        var reason: String
        /// The feeds it is known to touch; empty when that cannot be told.
        var feeds: [String]
    }

    /// Reads everything back, once, before serving, and starts committing.
    ///
    /// A directory marked as a restored copy (``RestoreMarker``) starts every feed, and every family
    /// member in `members/`, on a new history with an empty window (written as a new checkpoint, the
    /// members in one transaction), then the marker is removed durably; a crash before that takes new
    /// histories again at the next start.
    /// - Throws: ``StoreError/damaged(path:reason:)`` when the data cannot be trusted and the store was
    ///   not opened to set damage aside; ``StoreError/directory(path:reason:)`` when the directory's
    ///   files cannot be read or written.
    public func load() throws(StoreError) -> StoreContents {
        guard log == nil else {
            throw .io(path: directory, reason: "load() was called after the store had started committing; call it once, before the first commit")
        }
        let names: [String]
        do { names = try files.list(directory) } catch { throw .directory(path: directory, reason: error.description) }
        for name in names where name.hasSuffix(".checkpoint.tmp") {  // a compaction cut short: the logs still hold it all
            try? files.remove(directory + "/" + name)
        }
        let found = names.compactMap(Self.parse)
        let restoring = !readsBackup && names.contains(RestoreMarker.fileName)
        // The database of earlier versions is renamed, durably, before a migration's log takes a write:
        // still there beside files of generation 1 only, whose log holds no write, it is a migration a
        // crash cut short. Again. (A log with writes beside it is a store that went on: it is loaded.)
        if names.contains(SQLiteMigrator.fileName), found.allSatisfy({ $0.generation == 1 }), !logHoldsWrites(1) {
            var contents = try migrate(restoring: restoring)
            if restoring { try finishRestore(&contents) }
            startCommitting()
            return contents
        }
        if found.isEmpty {
            do { log = try createLog(1) } catch { throw .directory(path: directory, reason: error.description) }
            var contents = StoreContents(feeds: [])
            if restoring { try finishRestore(&contents) }
            startCommitting()
            return contents
        }
        var notes: [String] = []
        var damage: [Damage] = []
        var setAside: [String: String] = [:]
        var historiesInDoubt = false

        func note(_ found: Damage) {
            damage.append(found)
            if found.feeds.isEmpty { historiesInDoubt = true }
            for feed in found.feeds where setAside[feed] == nil {
                setAside[feed] = "\(found.reason) in \(found.path)"
                state.remove(feed)
            }
        }
        func replay(_ entries: [LogFormat.Entry], from path: String) {
            for entry in entries {
                switch entry {
                case .record(let record):
                    if let feed = record.feed, setAside[feed] != nil { continue }
                    do { try state.apply(record) } catch { note(Damage(path: path, reason: error.reason, feeds: [error.feed])) }
                case .damaged(let group):
                    note(Damage(path: path, reason: group.reason, feeds: group.feeds))
                    for record in group.intact where setAside[record.feed ?? ""] == nil {
                        do { try state.apply(record) } catch { note(Damage(path: path, reason: error.reason, feeds: [error.feed])) }
                    }
                }
            }
        }

        // The newest checkpoint, whole.
        let checkpoints = found.filter { $0.kind == .checkpoint }.map(\.generation)
        let base = checkpoints.max() ?? 0
        if base > 0 {
            let path = path(base, .checkpoint)
            let bytes = try read(path)
            do {
                let scan = try LogFormat.scan(bytes, kind: .checkpoint)
                replay(scan.entries, from: path)
                let ends = scan.entries.compactMap { entry -> Int? in if case .record(.end(let count)) = entry { count } else { nil } }
                let feeds = scan.entries.reduce(0) { count, entry in
                    switch entry {
                    case .record(.feed): count + 1
                    case .damaged(let group): count + max(1, group.feeds.count)
                    default: count
                    }
                }
                if ends.count != 1 || ends.first != feeds {
                    note(Damage(path: path, reason: "the checkpoint is incomplete (\(feeds) feeds, end record \(ends.map(String.init).joined(separator: ", ")))", feeds: []))
                } else if scan.tornTail > 0 {
                    notes.append("ignored \(scan.tornTail) bytes after the end of \(path)")
                }
            } catch {
                note(Damage(path: path, reason: error.reason, feeds: []))
            }
        }

        // The logs from the checkpoint's generation on, consecutive.
        let logs = found.filter { $0.kind == .log && $0.generation >= max(base, 1) }.map(\.generation).sorted()
        var expected = base > 0 ? base : 1
        for generation in logs {
            if generation != expected {
                note(Damage(path: path(expected, .log), reason: "it is missing (the files go on with generation \(generation))", feeds: []))
            }
            expected = generation + 1
        }
        if logs.isEmpty {
            note(Damage(path: path(max(base, 1), .log), reason: "it is missing: the writes after checkpoint \(base) are not there", feeds: []))
        }
        var lastScan: NewestLog?
        for (index, generation) in logs.enumerated() {
            let path = path(generation, .log)
            let isLast = index == logs.count - 1
            let bytes = try read(path)
            do {
                let scan = try LogFormat.scan(bytes, kind: .log)
                replay(scan.entries, from: path)
                if isLast {
                    lastScan = NewestLog(generation: generation, version: scan.version, end: scan.end, tornTail: scan.tornTail, size: bytes.count)
                } else if scan.tornTail > 0 {
                    note(Damage(path: path, reason: "its last \(scan.tornTail) bytes are not an intact group, though a newer log follows it", feeds: []))
                }
            } catch {
                // A log whose header never became durable (a crash while starting it) holds no write.
                if isLast && bytes.count <= LogFormat.headerSize && (bytes.isEmpty || bytes.starts(with: LogFormat.magic.prefix(bytes.count))) {
                    lastScan = NewestLog(generation: generation, version: LogFormat.formatVersion, end: 0, tornTail: bytes.count, size: bytes.count)
                } else {
                    note(Damage(path: path, reason: error.reason, feeds: []))
                }
            }
        }

        if !damage.isEmpty && !setAsideDamaged {
            let reasons = damage.map { found in
                (found.feeds.isEmpty ? "" : found.feeds.map { "feed '\($0)'" }.joined(separator: ", ") + ": ") + found.reason
                    + (found.path == damage[0].path ? "" : " (in \(found.path))")
            }
            throw .damaged(path: damage[0].path, reason: reasons.joined(separator: "; ")
                + "; start with --set-aside-damaged to keep what can be read and set the rest aside")
        }
        var contents = StoreContents(feeds: [], notes: notes)
        if damage.isEmpty, !restoring, let last = lastScan {
            // What was read may be only in the page cache (a process killed before its fdatasync, or
            // before the directory's fsync): make it durable before anything builds on it. An intact
            // group that was never synced looks like one that was, so syncing is the only safe choice.
            for path in (base > 0 ? [path(base, .checkpoint)] : []) + logs.dropLast().map({ path($0, .log) }) {
                try makeDurable { () throws(FileError) in try files.sync(path: path) }
            }
            try reopen(last, notes: &contents.notes)
            try makeDurable { () throws(FileError) in try files.syncDirectory(directory) }
        } else {
            // Set aside, or a restored copy: what could be read becomes a new checkpoint; the damaged
            // files are kept aside.
            if historiesInDoubt || restoring { state.restartHistories(RandomID.history) }
            if historiesInDoubt {
                contents.setAside.append(("*", "damage hid which feeds it touched: every feed starts a new history, so clients resync"))
            }
            contents.setAside += setAside.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            try rewrite(after: damage, generation: max(base, logs.last ?? 0) + 1, notes: &contents.notes)
        }
        contents.feeds = state.storedFeeds
        if restoring { try finishRestore(&contents) }
        startCommitting()
        return contents
    }

    /// A restored copy, once its feeds' new histories are durable: the family members take new
    /// histories too, then the marker goes.
    private func finishRestore(_ contents: inout StoreContents) throws(StoreError) {
        let members = try MemberStore.restartHistories(inData: directory, files: files)
        try RestoreMarker.remove(from: directory, files: files)
        contents.notes.append("restored from a copy (\(RestoreMarker.fileName)): \(state.feeds.count) feeds and \(members) family members start new histories, so clients resync with a snapshot; the marker is removed")
    }

    /// A sync at start that fails stops the start (it is not retried: after a failed `fsync` the
    /// kernel may have dropped the pages, so a second one proves nothing).
    private func makeDurable(_ sync: () throws(FileError) -> Void) throws(StoreError) {
        do { try sync() } catch {
            throw .directory(path: error.path, reason: "\(error.description); the start stops here, before serving what may not be on the disk")
        }
    }

    private func read(_ path: String) throws(StoreError) -> [UInt8] {
        do { return try files.read(path) } catch { throw .directory(path: path, reason: error.description) }
    }

    /// What the start read of the newest log: where its groups end, what follows them, its size.
    private struct NewestLog {
        var generation: Int
        var version: UInt16
        /// 0 when its header never became durable.
        var end: Int
        var tornTail: Int
        var size: Int
    }

    /// Opens the newest log to append to, cutting off a torn tail.
    /// A log of an older format is not appended to: the writes go on in a new log of this format.
    private func reopen(_ last: NewestLog, notes: inout [String]) throws(StoreError) {
        let path = path(last.generation, .log)
        if last.end == 0 {  // its header never became durable
            do { log = try createLog(last.generation) } catch { throw .directory(path: path, reason: error.description) }
            return
        }
        do throws(FileError) {
            let descriptor = try files.open(path, O_RDWR)
            if last.tornTail > 0 {
                try files.truncate(descriptor, to: last.end, path: path)
                notes.append("dropped \(last.tornTail) bytes at the end of \(path): a write cut short, never acknowledged")
            }
            do { try files.sync(descriptor, path: path) } catch {
                files.close(descriptor)
                throw error
            }
            if last.version < LogFormat.formatVersion {
                files.close(descriptor)
                log = try createLog(last.generation + 1)
                return
            }
            log = OpenLog(descriptor: descriptor, generation: last.generation, path: path, end: last.end,
                          allocated: last.tornTail > 0 ? last.end : last.size)
        } catch {
            throw .directory(path: path, reason: "\(error.description); the start stops here, before serving what may not be on the disk")
        }
    }

    /// After damage was set aside: writes what was read as checkpoint `generation`, starts its log, and
    /// renames the damaged files aside (`<name>.damaged-<seconds>`); the other old files go.
    private func rewrite(after damage: [Damage], generation: Int, notes: inout [String]) throws(StoreError) {
        do {
            // The log first, as compaction does: a crash between the two leaves a log (read after the
            // old files, which are still there to be set aside again), never a checkpoint with no log,
            // which the next start would take for lost writes.
            log = try createLog(generation)
            try writeCheckpoint(state.storedFeeds, generation: generation)
        } catch {
            throw .directory(path: directory, reason: "writing what could be read to a new checkpoint: \(error.description)")
        }
        let stamp = Int(WallClock.now())
        for path in Set(damage.map(\.path)) where files.size(path) != nil {
            do {
                try files.rename(path, to: path + ".damaged-\(stamp)")
                notes.append("moved the damaged file \(path) to \(path).damaged-\(stamp)")
            } catch {
                throw .directory(path: path, reason: error.description)
            }
        }
        removeFiles(before: generation)
        try makeDurable { () throws(FileError) in try files.syncDirectory(directory) }
    }

    /// Whether log `generation` exists and holds at least one record (a damaged one counts: it was a write).
    private func logHoldsWrites(_ generation: Int) -> Bool {
        guard let bytes = try? files.read(path(generation, .log)), bytes.count > LogFormat.headerSize else { return false }
        guard let scan = try? LogFormat.scan(bytes, kind: .log) else { return true }
        return !scan.entries.isEmpty
    }

    /// A database of the SQLite store of earlier versions: read it (``SQLiteMigrator``), write it as
    /// checkpoint 1, and keep the old file renamed (`feeds.sqlite3.migrated-<seconds>`).
    private func migrate(restoring: Bool) throws(StoreError) -> StoreContents {
        let old = SQLiteMigrator(directory: directory, setAsideDamaged: setAsideDamaged)
        let contents = try old.load()
        for feed in contents.feeds { try? state.apply(.feed(feed)) }
        if restoring { state.restartHistories(RandomID.history) }
        let stamp = Int(WallClock.now())
        do {
            // Log, checkpoint, then the database renamed aside: until that rename is durable, a start
            // finds the database beside generation 1 and migrates again (``load()``).
            log = try createLog(1)
            try writeCheckpoint(state.storedFeeds, generation: 1)
            for suffix in ["", "-wal", "-shm"] where files.size(old.path + suffix) != nil {
                try files.rename(old.path + suffix, to: old.path + ".migrated-\(stamp)" + suffix)
            }
        } catch {
            throw .directory(path: directory, reason: "migrating \(SQLiteMigrator.fileName): \(error.description)")
        }
        try makeDurable { () throws(FileError) in try files.syncDirectory(directory) }
        return StoreContents(feeds: state.storedFeeds, setAside: contents.setAside,
                             notes: ["migrated \(contents.feeds.count) feeds from \(old.path) (kept as \(SQLiteMigrator.fileName).migrated-\(stamp))"])
    }

}
