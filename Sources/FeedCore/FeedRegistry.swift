import DiffStreamJSON
import FeedStorage
import ServerSentEvents
import Logging

/// All feeds by name. Every write to a name goes through that name's one ``Feed`` (which serialises
/// them), so creating, replacing and deleting a name are atomic with respect to each other, in memory
/// and in the store. A deleted name keeps its (empty) `Feed`, so a later create is ordered after the
/// delete.
///
/// One verb per job: ``read(_:)-(String)`` a feed to answer or stream, ``current(_:)`` right before
/// subscribing, ``write(_:snapshot:viewState:hosted:options:)``, ``delete(_:writeID:)``, ``list()``,
/// ``restore(_:)`` at start, and ``basis(_:)`` / ``committedAnswer(_:writeID:request:)`` for hosted view
/// models. Every verb hands its work to the registry's ``FeedSource``, chosen once, when the registry
/// is made: ``LocalFeeds`` when it holds the authority of its feeds, or, with a store several instances
/// share, the copies `FeedRegistry(sharing:)` (module `FeedReplication`) keeps. No verb asks which.
///
/// The local table of feeds is behind a `Mutex` (``LocalFeeds``), not the actor: a write looks its feed
/// up and goes straight to it, without a hop through the registry that every writer of every feed would
/// queue on (issue 39).
public actor FeedRegistry {
    /// Where the feeds come from: the local table, or a shared store's copies.
    package nonisolated let source: any FeedSource
    public nonisolated let metrics: FeedMetrics
    /// The feeds and bytes held, against the ``StorageLimits``.
    public nonisolated let storage: StorageAccount
    /// The store when several instances share it (nil otherwise): the authority of every feed, whose
    /// copies ``source`` keeps.
    public nonisolated let shared: (any SharedFeedStore)?
    /// Where sharing says what happened: outages, lost data, leases taken and lost.
    public nonisolated let sharingLogger: Logger

    /// A registry that holds the authority of its feeds: in memory, or made durable in `store`.
    /// (For a store several instances share, `FeedRegistry(sharing:)` of module `FeedReplication`.)
    /// - Parameter store: where feeds are made durable; nil keeps them in memory only (`--data none`).
    public init(replayLimit: Int = 1024, transport: (any EventBroadcaster)? = nil, metrics: FeedMetrics = FeedMetrics(), store: (any FeedStore)? = nil, storage: StorageAccount = StorageAccount(),
                logger: Logger = Logger(label: "diffstream")) {
        precondition(!(store is any SharedFeedStore), "a store several instances share needs FeedRegistry(sharing:), module FeedReplication")
        self.init(metrics: metrics, store: store, storage: storage, logger: logger,
                  source: LocalFeeds(replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, storage: storage))
    }

    /// A registry whose feeds come from `source` (the copies of a shared store's, `FeedReplication`).
    package init(metrics: FeedMetrics, store: (any FeedStore)?, storage: StorageAccount, logger: Logger, source: any FeedSource) {
        self.sharingLogger = logger
        self.metrics = metrics
        self.storage = storage
        self.shared = store as? any SharedFeedStore
        self.source = source
        metrics.store = store
    }

    /// Brings back the feeds the store loaded: same history, version, snapshot and replay window.
    /// Snapshots are decoded in parallel (in slices, one task each), as that is most of a start's time.
    /// - Returns: the feeds whose stored snapshot could not be decoded (they are not restored).
    public func restore(_ stored: [StoredFeed]) async -> [(name: String, reason: String)] {
        let slices = 8
        let decoded = await withTaskGroup(of: [(Int, Result<WireSnapshot, WireError>)].self) { group in
            for slice in 0..<slices {
                group.addTask {
                    stride(from: slice, to: stored.count, by: slices).map { index in
                        (index, Result { () throws(WireError) -> WireSnapshot in try WireCodec.decodeSnapshot(stored[index].snapshot) })
                    }
                }
            }
            var results = [Result<WireSnapshot, WireError>?](repeating: nil, count: stored.count)
            for await part in group {
                for (index, result) in part { results[index] = result }
            }
            return results
        }
        var skipped: [(String, String)] = []
        for (entry, result) in zip(stored, decoded) {
            switch result {
            case .success(let snapshot)?:
                await source.restore(entry, snapshot: snapshot)
            case .failure(let error)?:
                skipped.append((entry.name, "its stored snapshot does not decode: \(error)"))
            case nil:
                skipped.append((entry.name, "its stored snapshot was not decoded"))
            }
        }
        return skipped
    }

    /// The feed, if it exists, for a read or a new stream (`GET /feeds/{feed}`, `/feeds/{feed}/events`).
    /// With a shared store, the answer reflects every write acknowledged before it on whichever
    /// instance (the copy's position is checked in the store, and a copy behind read again); during
    /// an outage, the copy held.
    /// - Throws: the shared store's error when it cannot be reached for a feed not held, or a copy
    ///   known to be behind cannot be read again.
    public nonisolated func read(_ name: String) async throws(StoreError) -> Feed? {
        try await read([name])[0].get()
    }

    /// ``read(_:)-(String)`` for several feeds (`GET /events`), with one position check for all of them.
    /// - Returns: one result per name, in order: the feed, nil when there is none, or the store's error.
    /// - Complexity: O(names); with a shared store, one round trip, plus a read of each feed not held or behind.
    public nonisolated func read(_ names: [String]) async -> [Result<Feed?, StoreError>] {
        await source.read(names)
    }

    /// The feed to subscribe to for `feed`: `feed` itself, unless it is a shared store's copy that was
    /// dropped as idle since it was read (then the copy held now). The API calls it right before
    /// subscribing, so that no subscription lands on a dropped copy, however long the request took
    /// between its read and its subscription.
    public func current(_ feed: Feed) async -> Feed {
        await source.current(feed)
    }

    /// The one `Feed` of a name, made (or loaded from the shared store) on first use.
    nonisolated func entry(_ name: String) async throws(StoreError) -> Feed {
        try await source.feed(name)
    }

    /// The ``Feed/documentMemo`` of `name` when this registry holds the feed's authority and the feed
    /// exists in memory (nil otherwise: the document is then read whole). Makes no feed.
    public nonisolated func documentMemo(_ name: String) -> WireSnapshotMemo? {
        source.documentMemo(name)
    }

    /// Whether the feed `name` keeps a hosted view model's state (``Feed/keepsViewState``); true for a
    /// feed not held yet when the registry has a store, shared or not.
    public nonisolated func keepsViewState(_ name: String) -> Bool {
        source.keepsViewState(name)
    }

    /// Names and versions, sorted by name (with a shared store: every instance's feeds, asked of it).
    /// - Throws: the shared store's error when it cannot be reached (an instance's copies are not the list).
    public func list() async throws(StoreError) -> [(name: String, version: Int)] {
        try await source.list()
    }

    /// Creates the feed at version 1, or publishes the snapshot to the existing one; answers once
    /// durable. Refused, with nothing changed, when that would pass a ``StorageLimits`` limit.
    /// - Parameter viewState: the view-model state behind this snapshot, stored with it (opaque bytes).
    /// - Parameter hosted: the server hosts this feed (a view model); it does not count against
    ///   `--max-feeds` (its bytes still count).
    /// - Parameter options: a write id, a fencing token or a basis (``FeedWriteOptions``).
    @discardableResult
    public nonisolated func write(_ name: String, snapshot: WireSnapshot, viewState: [UInt8]? = nil, hosted: Bool = false, options: FeedWriteOptions = FeedWriteOptions()) async throws(FeedWriteError) -> FeedWriteResult {
        let feed: Feed
        do { feed = try await entry(name) } catch { throw .store(error) }
        if hosted { await feed.markHosted() }
        return try await feed.write(snapshot, viewState: viewState, options: options)
    }

    /// With a shared store, the first answer of the write a client's `Idempotency-Key` committed on
    /// `name` (``FeedWriteResult/replayed``), else nil (also without a shared store, which keeps no keys).
    /// - Parameter request: the ``RequestDigest`` of the request sending the key.
    /// - Throws: ``FeedWriteError/idempotencyKeyReused`` when the key was kept for another request,
    ///   ``FeedWriteError/store(_:)`` when the store cannot be read.
    public func committedAnswer(_ name: String, writeID: String, request: String) async throws(FeedWriteError) -> FeedWriteResult? {
        let previous: (version: Int, answer: [UInt8])?
        do { previous = try await source.committedAnswer(name, writeID: writeID) } catch { throw .store(error) }
        guard let previous else { return nil }
        return try FeedWriteResult(replaying: previous.answer, version: previous.version, request: request)
    }

    /// The version and view-model state held for `name` (version 0: no feed): what a hosted view
    /// model's next change is computed from.
    public nonisolated func basis(_ name: String) async throws(StoreError) -> FeedBasis {
        await (try entry(name)).basis
    }

    /// Removes a feed once the store has; its subscribers get `event: deleted`. False if there was none.
    /// - Parameter writeID: a client's `Idempotency-Key` (with a shared store, a retry gets the first
    ///   answer; the key of another request is refused, ``FeedWriteError/idempotencyKeyReused``).
    /// - Throws: ``FeedWriteError/store(_:)`` when the store could not forget it.
    public nonisolated func delete(_ name: String, writeID: String? = nil) async throws(FeedWriteError) -> Bool {
        try await source.delete(name, writeID: writeID)
    }

    /// The feed `name`, committing through `log` (a family member kept in its own store), made from
    /// `stored` (its history, version, snapshot and window) when it is not held; the one held otherwise.
    /// Not with a shared store.
    /// - Parameter replayLimit: its replay window (a family's is smaller than the registry's).
    /// - Throws: ``StoreError/damaged(path:reason:)`` when the stored snapshot does not decode.
    package func adopt(_ name: String, restoring stored: StoredFeed?, log: any FeedLog, replayLimit: Int) async throws(StoreError) -> Feed {
        try await source.adopt(name, restoring: stored, log: log, replayLimit: replayLimit)
    }

    /// Forgets the feed `name` held in memory, without deleting it (a family member dropped as idle):
    /// its bytes leave the storage account (unless a store the account counts keeps them: a member
    /// kept on disk); the next write makes it again. Nothing with a shared store
    /// (its copies are dropped when idle by the shared store's ``FeedSource``).
    package func drop(_ name: String) async {
        await source.drop(name)
    }

    /// Whether the feeds' authority can be reached (nil: ready), checked now: `GET /readyz`. Always
    /// ready without a shared store.
    public func readiness() async -> String? {
        await source.readiness()
    }

    /// Brings ``storage`` (`/metrics`' feeds and bytes) to what the shared store counted over every
    /// instance; nothing without one, or when it cannot be reached.
    public func refreshUsage() async {
        await source.refreshUsage()
    }
}
