import Dispatch
import Synchronization

/// The durable store of a family's members (issue 38): one SQLite file, `<data dir>/members.sqlite3`,
/// with one row per member, read one member at a time, on use. Opening it reads no member, so a
/// start with 10,000 kept members costs what one with none does, and none of them is in memory.
///
/// A row holds what ``StoredFeed`` does: the history, the version, the encoded snapshot, the replay
/// window (at most ``maxBatches`` batches, a family's smaller window) and the view-model state. As a
/// ``FeedLog`` it is the authority over its members, like ``LogFeedStore``: a write is made durable
/// as it is, with no version check; an error is ``FeedCommitOutcome/unavailable(_:)``.
///
/// Durability: WAL with `synchronous=FULL`, so a commit is acknowledged only once its transaction is
/// fsynced into the write-ahead log, and survives a power cut.
///
/// Threads: every write runs on one serial queue, which owns the writing connection. Writers queue
/// their write; whoever finds the queue idle starts it draining, and each round takes every write
/// queued meanwhile into one transaction (group commit: one fsync for many members), then resumes
/// the writers from the queue. The Swift cooperative pool never waits for an fsync. Reads go through a
/// second, read-only connection (WAL lets it read while a commit is under way), behind a `Mutex`.
///
/// See `docs/member-store.md`.
public final class MemberStore: FeedLog, Sendable {
    /// The file's name inside the data directory.
    public static let fileName = "members.sqlite3"
    /// A family's replay window when none is given: the newest 16 batches.
    public static let defaultMaxBatches = 16

    /// The file's path.
    public let path: String
    /// The most batches a member's replay window keeps.
    public let maxBatches: Int
    private let queue: DispatchQueue
    private let writer: MemberWriter
    private let reader: Mutex<MemberReader?>
    private let state: Mutex<CommitState>

    /// The most writes one transaction takes: a bound on the write-ahead log's growth and on the
    /// first writer's wait, far above what concurrent members queue in one fsync.
    static let maxGroup = 1_024

    private typealias Reply = CheckedContinuation<Result<Bool, StoreError>, Never>

    /// What the writers and the draining queue share.
    private struct CommitState {
        var pending: [(write: FeedWrite, reply: Reply)] = []
        var draining = false
        var closed = false
        var totals: MemberTotals
        var metrics = StoreMetrics()
    }

    /// Opens (creating when missing) `members.sqlite3` in `directory`.
    /// - Parameter maxBatches: the most batches a member's replay window keeps (at least 0).
    /// - Complexity: O(1) in the number of members: pragmas, the schema version and one totals row.
    /// - Throws: ``StoreError/damaged(path:reason:)`` for a file of an unknown schema version (or no
    ///   SQLite database); ``StoreError/directory(path:reason:)`` when it cannot be opened.
    public init(directory: String, maxBatches: Int = MemberStore.defaultMaxBatches) throws(StoreError) {
        path = directory + "/" + Self.fileName
        self.maxBatches = max(0, maxBatches)
        queue = DispatchQueue(label: "diffstream-members")
        writer = try MemberWriter(path: path, maxBatches: self.maxBatches)
        let reader: MemberReader
        do { reader = try MemberReader(path: path) } catch { writer.close(); throw error }
        self.reader = Mutex(reader)
        state = Mutex(CommitState(totals: writer.totals))
    }

    // MARK: Reading

    /// The member `name` as last committed, or nil when it is not kept. Blocks its caller for one
    /// indexed read (it never waits for a commit's fsync).
    /// - Complexity: O(log n) to find the row, plus O(the member's bytes).
    /// - Throws: ``StoreError`` with the SQLite call's name and code; ``StoreError/damaged(path:reason:)``
    ///   for a row that cannot be read.
    public func read(_ name: String) throws(StoreError) -> StoredFeed? {
        try reader.withLock { (reader) throws(StoreError) -> StoredFeed? in
            guard let reader else { throw StoreError.io(path: path, reason: "the member store is closed") }
            return try reader.read(name)
        }
    }

    /// Up to `limit` kept members whose names start with `prefix` (a family's: `"home."`), in order.
    /// - Complexity: O(log n + limit).
    public func names(withPrefix prefix: String, limit: Int) throws(StoreError) -> [String] {
        try reader.withLock { (reader) throws(StoreError) -> [String] in
            guard let reader else { throw StoreError.io(path: path, reason: "the member store is closed") }
            return try reader.names(withPrefix: prefix, limit: limit)
        }
    }

    /// How many members are kept.
    /// - Complexity: O(1): a running total, kept in the file's `totals` row in the same transaction as
    ///   each write, and in memory.
    public func count() -> Int {
        state.withLock { $0.totals.members }
    }

    /// The bytes the members hold (every snapshot, window and state blob's length), for
    /// `--max-store-bytes`.
    /// - Complexity: O(1): a running total like ``count()``'s (an SQL `SUM` would read every row).
    public func bytes() -> Int {
        state.withLock { $0.totals.bytes }
    }

    /// The size of the store's files on disk: the database, its write-ahead log and its shared-memory
    /// index (`-wal`, `-shm`), as `diffstream_store_size_bytes` counts them beside the log's.
    /// - Complexity: three `stat` calls.
    public func sizeOnDisk() -> Int {
        let files = SystemStoreFiles()
        return [path, path + "-wal", path + "-shm"].reduce(0) { $0 + (files.size($1) ?? 0) }
    }

    /// Commit counters: commits (transactions), writes, the largest group; `sizeBytes` is ``bytes()``.
    public func metrics() -> StoreMetrics {
        state.withLock { state in
            var metrics = state.metrics
            metrics.sizeBytes = state.totals.bytes
            return metrics
        }
    }

    // MARK: Writing

    /// Commits `commit`'s write once it is durable: `.put` upserts the member's row (its batch joins the
    /// window, batches older than `keepFrom` and past ``maxBatches`` leave it; a nil state keeps the
    /// stored one), `.viewState` changes the state of a kept member only, `.delete` removes the row.
    /// - Returns: `.committed` at the put's version, or for a delete, 1 when the member existed and 0
    ///   when not; ``FeedCommitOutcome/unavailable(_:)`` with the store's error.
    public func commit(_ commit: FeedCommit) async -> FeedCommitOutcome {
        switch await submit(commit.write) {
        case .success(let existed):
            if case .delete = commit.write { return .committed(version: existed ? 1 : 0, answer: commit.answer, first: true) }
            return .committed(version: commit.version, answer: commit.answer, first: true)
        case .failure(let error):
            return .unavailable(error)
        }
    }

    /// Deletes the member `name` and everything kept for it, once durable.
    /// - Returns: whether it was kept.
    public func delete(_ name: String) async throws(StoreError) -> Bool {
        try await submit(.delete(name: name)).get()
    }

    /// Finishes the writes already queued, then closes both connections. Later calls fail. Idempotent.
    /// Blocks its caller until the queued writes are durable: call it at shutdown, not from the queue.
    public func close() {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        // The reader first: the last connection to close checkpoints the WAL into the file and removes
        // it, and only the writing one can. Left behind, the WAL would be read whole by the next open.
        reader.withLock { reader in
            reader?.close()
            reader = nil
        }
        queue.sync { writer.close() }  // after every drain already scheduled
    }

    /// Queues `write`, starting the queue's draining when it is idle, and waits for its transaction.
    private func submit(_ write: FeedWrite) async -> Result<Bool, StoreError> {
        await withCheckedContinuation { (reply: Reply) in
            let refused = state.withLock { state in
                guard !state.closed else { return true }
                state.pending.append((write, reply))
                if !state.draining {
                    state.draining = true
                    // Scheduled under the lock, so `close()` finds it ahead of its own block.
                    queue.async { self.drain() }
                }
                return false
            }
            if refused { reply.resume(returning: .failure(.io(path: path, reason: "the member store is closed"))) }
        }
    }

    /// On the queue: commits everything queued, one transaction per round, until nothing is.
    private func drain() {
        while true {
            let group = state.withLock { state in
                if state.pending.isEmpty { state.draining = false }
                let group = Array(state.pending.prefix(Self.maxGroup))
                state.pending.removeFirst(group.count)
                return group
            }
            guard !group.isEmpty else { return }
            let results = writer.commitGroup(group.map(\.write))
            let totals = writer.totals
            state.withLock { state in
                state.totals = totals
                state.metrics.commits += 1
                state.metrics.writes += group.count
                state.metrics.maxWritesPerCommit = max(state.metrics.maxWritesPerCommit, group.count)
                if results.contains(where: { if case .failure = $0 { true } else { false } }) { state.metrics.failedCommits += 1 }
            }
            for (entry, result) in zip(group, results) { entry.reply.resume(returning: result) }
        }
    }
}
