import DiffStreamJSON
import FeedStorage
import ServerSentEvents
import Synchronization

/// The feeds a ``FeedRegistry`` holds the authority of (in memory, or made durable in a store this
/// instance owns), by name: the registry's ``FeedSource`` when it shares no store. Every feed is made on
/// first use and kept (a deleted name keeps its empty `Feed`, so a later create is ordered after the
/// delete), restored from the store at start, or adopted with a log of its own (a family member).
///
/// The table is behind a `Mutex`, not an actor: a write looks its feed up and goes straight to it,
/// without a hop that every writer of every feed would queue on (issue 39).
package final class LocalFeeds: FeedSource {
    let feeds = Mutex<[String: Feed]>([:])
    let replayLimit: Int
    let transport: (any EventBroadcaster)?
    let metrics: FeedMetrics
    let store: (any FeedStore)?
    let storage: StorageAccount

    package init(replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, storage: StorageAccount) {
        self.replayLimit = replayLimit
        self.transport = transport
        self.metrics = metrics
        self.store = store
        self.storage = storage
    }

    package func feed(_ name: String) -> Feed {
        feeds.withLock { feeds in
            if let feed = feeds[name] { return feed }
            let feed = Feed(name: name, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage)
            feeds[name] = feed
            return feed
        }
    }

    package func read(_ names: [String]) async -> [Result<Feed?, StoreError>] {
        var found: [Result<Feed?, StoreError>] = []
        found.reserveCapacity(names.count)
        for name in names {
            if let feed = feeds.withLock({ $0[name] }), await feed.exists { found.append(.success(feed)) } else { found.append(.success(nil)) }
        }
        return found
    }

    package func current(_ feed: Feed) -> Feed { feed }

    package func list() async -> [(name: String, version: Int)] {
        var result: [(String, Int)] = []
        for (name, feed) in feeds.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            let version = await feed.version
            if version > 0 { result.append((name, version)) }
        }
        return result
    }

    /// A name never used is not made to be deleted. (This instance keeps no write ids.)
    package func delete(_ name: String, writeID: String?) async throws(FeedWriteError) -> Bool {
        guard let feed = feeds.withLock({ $0[name] }) else { return false }
        return try await feed.delete()
    }

    package func committedAnswer(_ name: String, writeID: String) -> (version: Int, answer: [UInt8])? { nil }

    package func keepsViewState(_ name: String) -> Bool {
        feeds.withLock { $0[name] }?.keepsViewState ?? (store != nil)
    }

    package func documentMemo(_ name: String) -> WireSnapshotMemo? {
        feeds.withLock { $0[name] }?.documentMemo
    }

    package func restore(_ stored: StoredFeed, snapshot: WireSnapshot) {
        let feed = Feed(restoring: stored, snapshot: snapshot, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage)
        feeds.withLock { $0[stored.name] = feed }
        metrics.setSubscribers(stored.name, 0)
    }

    package func adopt(_ name: String, restoring stored: StoredFeed?, log: any FeedLog, replayLimit: Int) throws(StoreError) -> Feed {
        if let feed = feeds.withLock({ $0[name] }) { return feed }
        let feed: Feed
        if let stored {
            let snapshot: WireSnapshot
            do { snapshot = try WireCodec.decodeSnapshot(stored.snapshot) } catch {
                throw .damaged(path: name, reason: "its stored snapshot does not decode: \(error)")
            }
            feed = Feed(restoring: stored, snapshot: snapshot, replayLimit: replayLimit, transport: transport, metrics: metrics, store: nil, account: storage, log: log)
        } else {
            feed = Feed(name: name, replayLimit: replayLimit, transport: transport, metrics: metrics, store: nil, account: storage, log: log)
        }
        return feeds.withLock { feeds in
            if let held = feeds[name] { return held }  // made meanwhile by a write (the table is not an actor)
            feeds[name] = feed
            return feed
        }
    }

    package func drop(_ name: String) async {
        guard let feed = feeds.withLock({ $0.removeValue(forKey: name) }) else { return }
        let bytes = await feed.storedBytes
        // A member whose log counts its bytes (kept on disk) stays counted there.
        if await feed.exists, !feed.bytesKeptByLog { storage.releaseFeed(bytes: bytes, counted: !(await feed.isHosted)) }
        metrics.removeFeed(name)
    }

    package func readiness() -> String? { nil }

    package func refreshUsage() {}
}
