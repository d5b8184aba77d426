import Dispatch
import CThreads
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded store: an append-only log of our own, with length- and CRC-framed records, and
/// checkpoints that compact it; in a directory locked against a second process.
///
/// Files (``LogFormat`` gives their bytes): `feeds-<n>.log` holds the records of every commit since
/// checkpoint `feeds-<n>.checkpoint`, which holds every feed as it stood when log `n - 1` ended. At
/// start the newest checkpoint is read and the logs from its generation on are replayed.
///
/// Writing: one thread (a ``GroupCommitter``) takes every write queued, appends their records as one
/// group with one `pwrite` and makes it durable with one `fdatasync`, then answers the writers. A put
/// stores its snapshot as a byte delta from the one before when that is much smaller (one item of a
/// large feed changed), and whole at least every ``StoreState/maxDeltas`` puts. The store keeps every
/// feed in memory too (``StoreState``), so it can write checkpoints without reading anything back.
///
/// Compacting: once the log outgrows the live data (and at least ``minimumLogBytes``), the thread
/// starts log `n + 1`, and a second thread writes checkpoint `n + 1` from a copy of the state (a
/// temporary file, `fdatasync`, `rename`, a directory `fsync`), then removes the older files. Writes go
/// on meanwhile. So the directory holds about one checkpoint, its log and, while compacting, a second
/// checkpoint: a small multiple of the live data.
///
/// See `docs/architecture.md` for why a log of our own, and for what happens on a torn write, a full
/// disk and a corrupt file.
public final class LogFeedStore: FeedStore, @unchecked Sendable {
    // `@unchecked Sendable`: `state`, `log` and `nextRotation` belong to the thread calling `init` and
    // `load()` until `load()` starts the committer's thread, and to that thread afterwards (`close()`
    // touches `log` after stopping it); `compaction` is a `Mutex`; the committer guards its own state.

    /// The log is compacted once it is larger than the live data and than this.
    public static let minimumLogBytes = 1 << 20

    /// A log grows by this many zero bytes at a time, written with the group that needs them. Writing
    /// into space the file already has leaves `fdatasync` no file size to write: measured on ext4 on a
    /// virtio disk, a 4.4 kB write and `fdatasync` took 167 µs growing the file and 103 µs inside
    /// written space (`Benchmarks/fsync-prealloc.py`, docs/benchmarks.md). PostgreSQL preallocates its
    /// WAL segments for the same reason.
    static let preallocationBytes = 256 << 10

    public let directory: String
    let setAsideDamaged: Bool
    /// A backup being checked: ``load()`` leaves its ``RestoreMarker`` in place.
    let readsBackup: Bool
    /// Every file call goes through here (the system's, or a simulated disk in the tests).
    let files: any StoreFiles
    let tuning: Tuning
    private let lock: DirectoryLock
    private let committer: GroupCommitter
    var state = StoreState()
    var log: OpenLog?
    /// The log size at which the next compaction may start (moved on when one fails).
    var nextRotation: Int
    /// What the commit thread and the compaction's thread share.
    private struct CompactionState {
        /// The bytes of every file in the directory but the open log.
        var sizeOfOtherFiles = 0
        var running = false
        var failed = false
    }

    private let compaction = Mutex(CompactionState())
    private let compactionDone = DispatchSemaphore(value: 0)

    /// The log being appended to.
    struct OpenLog {
        var descriptor: Int32
        var generation: Int
        var path: String
        /// Where the next group goes: the end of the last durable group.
        var end: Int
        /// The file's size: zero bytes from `end` up to here are preallocated for the next groups.
        var allocated: Int
        /// After preallocating did not fit on the disk, the log grows without it until `end` passes
        /// this (so a nearly full disk is not filled to the brim and given back on every commit).
        var preallocateFrom = 0
    }

    /// Opens (creating if needed) and locks `directory`.
    /// - Parameter setAsideDamaged: on damaged data, set the damaged feeds (or files) aside and go on,
    ///   instead of refusing to start.
    /// - Throws: ``StoreError/directory(path:reason:)``, ``StoreError/locked(path:)``.
    public convenience init(directory: String, setAsideDamaged: Bool = false) throws(StoreError) {
        try self.init(directory: directory, setAsideDamaged: setAsideDamaged, files: SystemStoreFiles())
    }

    /// Where checkpoints are written.
    enum Compaction {
        /// On a second thread, while writes go on (the server).
        case concurrent
        /// By the committing thread, before it answers the write that made it due: one schedule of
        /// file calls for a given sequence of writes (the power-cut tests enumerate crash points in it).
        case inline
    }

    /// How the store sizes and schedules its work: the server's defaults, or small steps on a
    /// simulated disk, where a few dozen writes then cross every kind of file change.
    struct Tuning {
        /// The log is compacted once it is larger than the live data and than this.
        var compactAfterBytes = LogFeedStore.minimumLogBytes
        /// The log grows by this many zero bytes at a time.
        var preallocationBytes = LogFeedStore.preallocationBytes
        var compaction = Compaction.concurrent
    }

    /// - Parameter readsBackup: the store is a backup being checked (``backup(from:to:)``): its
    ///   ``RestoreMarker`` is left for the start that restores it.
    init(directory: String, setAsideDamaged: Bool = false, files: any StoreFiles, tuning: Tuning = Tuning(), readsBackup: Bool = false) throws(StoreError) {
        self.directory = directory
        self.setAsideDamaged = setAsideDamaged
        self.readsBackup = readsBackup
        self.files = files
        self.tuning = tuning
        nextRotation = tuning.compactAfterBytes
        lock = try DirectoryLock(directory: directory, files: files)
        committer = GroupCommitter(path: directory)
    }

    /// Finishes the writes already queued and any compaction under way, closes the log and releases the
    /// directory's lock. Commits after this fail.
    public func close() {
        committer.stop()
        let running = compaction.withLock { $0.running }
        if running { compactionDone.wait() }
        if let log { files.close(log.descriptor) }
        log = nil
        lock.release()
    }

    func path(_ generation: Int, _ kind: LogFormat.FileKind) -> String {
        directory + "/" + Self.fileName(generation, kind)
    }

    static func fileName(_ generation: Int, _ kind: LogFormat.FileKind) -> String {
        let digits = String(generation)
        return "feeds-" + String(repeating: "0", count: max(0, 10 - digits.count)) + digits + (kind == .log ? ".log" : ".checkpoint")
    }

    /// The generation and kind of a store file's name, or nil for any other name.
    static func parse(_ name: String) -> (generation: Int, kind: LogFormat.FileKind)? {
        guard name.hasPrefix("feeds-") else { return nil }
        let kind: LogFormat.FileKind
        let stem: Substring
        if name.hasSuffix(".log") { kind = .log; stem = name.dropFirst(6).dropLast(4) }
        else if name.hasSuffix(".checkpoint") { kind = .checkpoint; stem = name.dropFirst(6).dropLast(11) }
        else { return nil }
        guard !stem.isEmpty, stem.allSatisfy(\.isASCII), let generation = Int(stem), generation >= 1 else { return nil }
        return (generation, kind)
    }

    // MARK: Writing

    public func commit(_ write: FeedWrite) async throws(StoreError) {
        try await committer.submit(write)
    }

    public func metrics() -> StoreMetrics { committer.metrics() }

    /// Called by ``load()`` once the state is read and the log open: starts committing.
    func startCommitting() {
        if let log {
            let others = otherFilesSize(except: log.generation)
            compaction.withLock { $0.sizeOfOtherFiles = others }
        }
        updateSize()
        committer.start(threadName: "store-commit") { [self] writes in commitGroup(writes) }
    }

    /// One group for all; if it fails and there were several, one group each (so one write that does
    /// not fit on a nearly full disk does not fail the others).
    private func commitGroup(_ writes: [FeedWrite]) -> [Result<Void, StoreError>] {
        let results: [Result<Void, StoreError>]
        switch append(writes) {
        case .success: results = writes.map { _ in .success(()) }
        case .failure(let error) where writes.count == 1: results = [.failure(error)]
        case .failure: results = writes.map { append([$0]) }
        }
        compactIfDue()
        updateSize()
        return results
    }

    /// Appends the writes' records as one group and makes it durable; the state changes only then
    /// (in place: a copy of it per commit would copy every window it touches).
    private func append(_ writes: [FeedWrite]) -> Result<Void, StoreError> {
        guard var log else { return .failure(.io(path: directory, reason: "the store was not loaded")) }
        var group = LogFormat.GroupEncoder()
        var records: [StoreRecord] = []
        records.reserveCapacity(writes.count)
        var seen = Set<String>()
        for write in writes {
            // A feed's second write in one group is stored whole: its delta would need the first applied.
            let record = seen.insert(write.feed).inserted ? state.record(for: write) : StoreState().record(for: write)
            records.append(record)
            group.append(record)
        }
        let bytes = group.finish(at: log.end, generation: log.generation)
        // The same write preallocates the next stretch when the group passes the file's end: zeros
        // after it, to a whole step. On a nearly full disk that may not fit where the group alone
        // would, so a write that found the disk full is tried once more without them.
        let preallocating = log.end + bytes.count > log.allocated && log.end >= log.preallocateFrom
        var result = writeGroup(bytes, preallocating: preallocating, to: &log)
        if case .failure(.full) = result, preallocating {
            log.preallocateFrom = log.end + tuning.preallocationBytes
            result = writeGroup(bytes, preallocating: false, to: &log)
        }
        self.log = log
        if case .failure(let error) = result { return .failure(error) }
        for record in records {
            // Cannot fail: each record was made from this state (a delta only from the stored version).
            try? state.apply(record)
        }
        return .success(())
    }

    /// Writes a group at the log's end and makes it durable; on failure, cuts the file back to where
    /// the group began (so a restart never reads it as acknowledged) and leaves `end` where it was.
    private func writeGroup(_ group: [UInt8], preallocating: Bool, to log: inout OpenLog) -> Result<Void, StoreError> {
        var bytes = group
        if preallocating {
            let groupEnd = log.end + group.count
            bytes.append(contentsOf: repeatElement(0, count: (groupEnd / tuning.preallocationBytes + 1) * tuning.preallocationBytes - groupEnd))
        }
        do {
            try files.write(log.descriptor, bytes, at: log.end, path: log.path)
            try files.sync(log.descriptor, path: log.path)
        } catch {
            // The preallocated space goes too (a full disk gets it back).
            try? files.truncate(log.descriptor, to: log.end, path: log.path)
            log.allocated = log.end
            return .failure(error.storeError(directory: directory))
        }
        log.allocated = max(log.allocated, log.end + bytes.count)
        log.end += group.count
        return .success(())
    }

    private func updateSize() {
        let total = compaction.withLock { $0.sizeOfOtherFiles + (log?.allocated ?? 0) }
        committer.updateMetrics { $0.sizeBytes = total }
    }

    // MARK: Compacting

    /// After a commit: when the log has outgrown the live data, start the next log and write a
    /// checkpoint of the state on a second thread.
    private func compactIfDue() {
        guard let current = log, current.end >= max(nextRotation, state.liveBytes) else { return }
        let (busy, failed) = compaction.withLock { compaction in
            let seen = (compaction.running, compaction.failed)
            compaction.failed = false
            return seen
        }
        if failed { nextRotation = current.end + tuning.compactAfterBytes }
        guard !busy, !failed else { return }
        let generation = current.generation + 1
        do {
            log = try createLog(generation)
        } catch {
            nextRotation = current.end + tuning.compactAfterBytes  // try again after as much more log
            return
        }
        // Its free space goes (not synced: if the size is lost in a crash, the zeros read as free space).
        try? files.truncate(current.descriptor, to: current.end, path: current.path)
        files.close(current.descriptor)
        nextRotation = tuning.compactAfterBytes
        let feeds = state.storedFeeds
        compaction.withLock { compaction in
            compaction.running = true
            compaction.sizeOfOtherFiles += current.end
        }
        let write: @Sendable () -> Void = { [self] in
            let succeeded = (try? writeCheckpoint(feeds, generation: generation)) != nil
            if succeeded { removeFiles(before: generation) }
            let others = otherFilesSize(except: generation)
            compaction.withLock { compaction in
                compaction.running = false
                compaction.failed = !succeeded
                compaction.sizeOfOtherFiles = others
            }
            committer.updateMetrics {
                if succeeded { $0.compactions += 1 } else { $0.failedCompactions += 1 }
            }
            compactionDone.signal()
        }
        switch tuning.compaction {
        case .inline:
            write()
            compactionDone.wait()
        case .concurrent:
            let thread = Thread {
                diffstream_name_this_thread("store-compact")
                write()
            }
            thread.start()
        }
    }

    /// A new, empty log, durable with its name before anything is written to it.
    func createLog(_ generation: Int) throws(FileError) -> OpenLog {
        let path = path(generation, .log)
        let descriptor = try files.open(path, O_RDWR | O_CREAT | O_TRUNC)
        do {
            let header = LogFormat.header(kind: .log, generation: generation)
            try files.write(descriptor, header, at: 0, path: path)
            try files.sync(descriptor, path: path)
            try files.syncDirectory(directory)
            return OpenLog(descriptor: descriptor, generation: generation, path: path, end: header.count, allocated: header.count)
        } catch {
            files.close(descriptor)
            try? files.remove(path)
            throw error
        }
    }

    /// Writes checkpoint `generation`: a temporary file made durable, then renamed into place.
    func writeCheckpoint(_ feeds: [StoredFeed], generation: Int) throws(FileError) {
        let final = path(generation, .checkpoint), temporary = final + ".tmp"
        let descriptor = try files.open(temporary, O_RDWR | O_CREAT | O_TRUNC)
        do {
            var offset = 0
            var buffer = LogFormat.header(kind: .checkpoint, generation: generation)
            for feed in feeds {
                var group = LogFormat.GroupEncoder(capacity: feed.snapshot.count + 256)
                group.append(.feed(feed))
                buffer.append(contentsOf: group.finish(at: offset + buffer.count, generation: generation))
                if buffer.count >= 1 << 20 {
                    try files.write(descriptor, buffer, at: offset, path: temporary)
                    offset += buffer.count
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            var end = LogFormat.GroupEncoder()
            end.append(.end(feeds: feeds.count))
            buffer.append(contentsOf: end.finish(at: offset + buffer.count, generation: generation))
            try files.write(descriptor, buffer, at: offset, path: temporary)
            try files.sync(descriptor, path: temporary)
            files.close(descriptor)
        } catch {
            files.close(descriptor)
            try? files.remove(temporary)
            throw error
        }
        do {
            try files.rename(temporary, to: final)
            try files.syncDirectory(directory)
        } catch {
            try? files.remove(temporary)
            throw error
        }
    }

    /// Removes the logs and checkpoints older than checkpoint `generation` (it holds all they held).
    func removeFiles(before generation: Int) {
        guard let names = try? files.list(directory) else { return }
        for name in names {
            if let file = Self.parse(name), file.generation < generation {
                try? files.remove(directory + "/" + name)
            }
        }
        try? files.syncDirectory(directory)
    }

    /// The bytes of the directory's files other than log `generation`.
    func otherFilesSize(except generation: Int) -> Int {
        let open = Self.fileName(generation, .log)
        return ((try? files.list(directory)) ?? []).filter { $0 != open }.reduce(0) { $0 + (files.size(directory + "/" + $1) ?? 0) }
    }
}
