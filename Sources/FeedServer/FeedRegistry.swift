import DiffStreamJSON
import FeedStore
import HTTPCore

/// All feeds by name. Every write to a name goes through that name's one ``Feed`` (which serialises
/// them), so creating, replacing and deleting a name are atomic with respect to each other, in memory
/// and in the store. A deleted name keeps its (empty) `Feed`, so a later create is ordered after the
/// delete.
public actor FeedRegistry {
    private var feeds: [String: Feed] = [:]
    private let replayLimit: Int
    private let transport: (any EventBroadcaster)?
    private let store: (any FeedStore)?
    public nonisolated let metrics: FeedMetrics
    /// The feeds and bytes held, against the ``StorageLimits``.
    public nonisolated let storage: StorageAccount

    /// - Parameter store: where feeds are made durable; nil keeps them in memory only (`--data none`).
    public init(replayLimit: Int = 1024, transport: (any EventBroadcaster)? = nil, metrics: FeedMetrics = FeedMetrics(), store: (any FeedStore)? = nil, storage: StorageAccount = StorageAccount()) {
        self.replayLimit = replayLimit
        self.transport = transport
        self.store = store
        self.metrics = metrics
        self.storage = storage
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
                feeds[entry.name] = Feed(restoring: entry, snapshot: snapshot, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage)
                metrics.setSubscribers(entry.name, 0)
            case .failure(let error)?:
                skipped.append((entry.name, "its stored snapshot does not decode: \(error)"))
            case nil:
                skipped.append((entry.name, "its stored snapshot was not decoded"))
            }
        }
        return skipped
    }

    /// The feed, if it exists.
    public func feed(_ name: String) async -> Feed? {
        guard let feed = feeds[name], await feed.exists else { return nil }
        return feed
    }

    /// Names and versions, sorted by name.
    public func list() async -> [(name: String, version: Int)] {
        var result: [(String, Int)] = []
        for (name, feed) in feeds.sorted(by: { $0.key < $1.key }) {
            let version = await feed.version
            if version > 0 { result.append((name, version)) }
        }
        return result
    }

    /// Creates the feed at version 1, or publishes the snapshot to the existing one; answers once durable.
    /// Refused, with nothing changed, when that would pass a ``StorageLimits`` limit.
    /// - Parameter viewState: the view-model state behind this snapshot, stored with it (opaque bytes).
    /// - Parameter hosted: the server hosts this feed (a view model); it does not count against
    ///   `--max-feeds` (its bytes still count).
    public func put(_ name: String, snapshot: WireSnapshot, viewState: [UInt8]? = nil, hosted: Bool = false) async throws(FeedWriteError) -> (created: Bool, version: Int, operations: Int) {
        let feed = entry(name)
        if hosted { await feed.markHosted() }
        return try await feed.publish(snapshot, viewState: viewState)
    }

    /// Removes a feed once the store has; its subscribers get `event: deleted`. False if there was none.
    public func delete(_ name: String) async throws(StoreError) -> Bool {
        guard let feed = feeds[name] else { return false }
        return try await feed.delete()
    }

    private func entry(_ name: String) -> Feed {
        if let feed = feeds[name] { return feed }
        let feed = Feed(name: name, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage)
        feeds[name] = feed
        return feed
    }
}
