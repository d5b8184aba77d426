import DiffStreamJSON
import FeedStorage
import HTTPCore
import Logging

/// All feeds by name. Every write to a name goes through that name's one ``Feed`` (which serialises
/// them), so creating, replacing and deleting a name are atomic with respect to each other, in memory
/// and in the store. A deleted name keeps its (empty) `Feed`, so a later create is ordered after the
/// delete.
public actor FeedRegistry {
    var feeds: [String: Feed] = [:]
    let replayLimit: Int
    let transport: (any EventBroadcaster)?
    let store: (any FeedStore)?
    public nonisolated let metrics: FeedMetrics
    /// The feeds and bytes held, against the ``StorageLimits``.
    public nonisolated let storage: StorageAccount
    /// The store when several instances share it: feeds are loaded from it on first use and
    /// followed while they are used (``idleFeedLifetime``), and a follower (`SharedFeedFollower`,
    /// module `FeedReplication`) keeps them up to date.
    public nonisolated let shared: (any SharedFeedStore)?
    /// Feeds being loaded from the shared store (one load per name).
    var loading: [String: Task<Feed, any Error>] = [:]
    /// Why the shared store cannot be reached, while it cannot: its commands (``commandsDown``), or
    /// else its events (``eventsDown``). Two sources so that neither clears the other's: events that
    /// keep failing while commands work are an outage until the events are back, not one that comes and
    /// goes with every position check.
    var outage: String? { commandsDown ?? eventsDown }
    /// Why the store's commands failed (a position check, `/readyz`); nil once one succeeds.
    var commandsDown: String?
    /// Calls to the store's commands numbered as they start (``askCommands()``), and the latest whose
    /// result was recorded: a call that fails after a later one succeeded (an old connection's error
    /// arriving after a restart of the store) does not bring the outage back.
    var commandsAsked = 0, commandsHeard = 0
    /// Why the store's events stopped (`interrupted`); nil once their connection is back (`connected`).
    var eventsDown: String?
    /// The recovery from lost data in progress, which later callers wait for.
    var losing: Task<Void, Never>?
    /// Sharing was stopped (shutdown): failures of calls still in flight are not outages.
    var stopped = false
    /// Where sharing says what happened: outages, lost data, leases taken and lost.
    public nonisolated let sharingLogger: Logger
    /// With a shared store: seconds after its last use (a request, a write, a subscription) that a copy
    /// nothing needs any more (``Feed/isIdle``) is dropped and no longer followed, so that an instance
    /// holds, follows and checks the feeds its users use, not every feed it was ever asked for.
    public nonisolated let idleFeedLifetime: Double
    /// When each held feed was last used, on ``clock``.
    var lastUsed: [String: Double] = [:]
    /// Monotonic seconds (injected for tests).
    let clock: @Sendable () -> Double

    /// - Parameter store: where feeds are made durable; nil keeps them in memory only (`--data none`).
    /// - Parameter idleFeedLifetime: with a shared store, how long an unused copy of a feed is kept.
    /// - Parameter clock: monotonic seconds, for ``idleFeedLifetime``.
    public init(replayLimit: Int = 1024, transport: (any EventBroadcaster)? = nil, metrics: FeedMetrics = FeedMetrics(), store: (any FeedStore)? = nil, storage: StorageAccount = StorageAccount(),
                logger: Logger = Logger(label: "diffstream"), idleFeedLifetime: Double = 60, clock: @escaping @Sendable () -> Double = MonotonicClock.now) {
        self.sharingLogger = logger
        self.idleFeedLifetime = idleFeedLifetime
        self.clock = clock
        self.replayLimit = replayLimit
        self.transport = transport
        self.store = store
        self.metrics = metrics
        self.storage = storage
        self.shared = store as? any SharedFeedStore
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

    /// The feed, if it exists (nil too when a shared store cannot be reached to load it).
    public func feed(_ name: String) async -> Feed? {
        try? await lookup(name)
    }

    /// The feed, if it exists. With a shared store, a feed this instance does not hold yet is
    /// followed, then loaded (in that order, so no commit falls between).
    /// - Throws: the shared store's error when it cannot be reached to load the feed.
    public func lookup(_ name: String) async throws(StoreError) -> Feed? {
        if let shared, feeds[name] == nil, loading[name] == nil {
            // Not held: a name the store does not have is answered without following or keeping it, so
            // requests for names that do not exist cannot grow the cache or the subscriptions.
            guard try await shared.positions([name]).feeds[name] != nil else { return nil }
        }
        let feed = try await cached(name)
        if await feed.exists { return feed }
        // Held as gone, yet it may have been created on another instance a moment ago (its message
        // still on the way): ask the store, so a read after a create elsewhere finds it.
        guard let shared, try await shared.positions([name]).feeds[name] != nil else { return nil }
        await feed.refreshNow()
        return await feed.exists ? feed : nil
    }

    /// The feed for a read or a new stream (`GET /feeds/{feed}`, `/feeds/{feed}/events`): with a shared
    /// store, the feed's position is checked in the store first and a copy that is behind (a commit or
    /// delete on another instance whose message is still on the way) read again, so the answer
    /// reflects every write acknowledged before it, on whichever instance. During an outage, the copy
    /// held (a feed not held throws). Without a shared store, ``lookup(_:)``.
    public func latest(_ name: String) async throws(StoreError) -> Feed? {
        try await latest([name])[0].get()
    }

    /// ``latest(_:)`` for several feeds (`GET /events`), with one position check for all of them.
    /// - Returns: one result per name, in order: the feed, nil when there is none, or the store's error.
    /// - Complexity: one round trip to the store, plus a read of each feed not held or behind.
    public func latest(_ names: [String]) async -> [Result<Feed?, StoreError>] {
        guard let shared else {
            var found: [Result<Feed?, StoreError>] = []
            for name in names {
                do { found.append(.success(try await lookup(name))) } catch { found.append(.failure(error)) }
            }
            return found
        }
        if let outage, names.allSatisfy({ feeds[$0] != nil }) {
            // The store is known to be down: the copies, without waiting for a call to time out.
            return await copies(names, or: .unreachable(url: shared.location, reason: outage))
        }
        let call = askCommands()
        let positions: StorePositions
        do { positions = try await shared.positions(names) } catch {
            await setCommandsDown(error.description, call: call)
            return await copies(names, or: error)
        }
        await setCommandsDown(nil, call: call)
        if !positions.intact { await storeLostData() }
        var found: [Result<Feed?, StoreError>] = []
        for name in names {
            // A name the store does not have and this instance does not hold is answered without following it.
            if positions.intact, positions.feeds[name] == nil, feeds[name] == nil, loading[name] == nil {
                found.append(.success(nil))
                continue
            }
            do {
                let feed = try await cached(name)
                let held = await feed.position
                // A copy known to be behind that cannot be read again is not an answer (503).
                if !positions.intact || Self.isBehind(held, positions.feeds[name]), let error = await feed.refreshNow() {
                    found.append(.failure(error))
                    continue
                }
                found.append(.success(await feed.exists ? feed : nil))
            } catch {
                found.append(.failure(error))
            }
        }
        return found
    }

    /// The copies held of `names` during an outage: each feed as this instance holds it, or `error`
    /// for a name it does not hold.
    func copies(_ names: [String], or error: StoreError) async -> [Result<Feed?, StoreError>] {
        var held: [Result<Feed?, StoreError>] = []
        for name in names {
            if let feed = feeds[name] { held.append(.success(await feed.exists ? feed : nil)) } else { held.append(.failure(error)) }
        }
        return held
    }

    /// Whether a copy at `held` misses something the store holds at `stored` (nil: no feed): another
    /// history, a later version, or a delete. A copy ahead (a commit heard after the store answered)
    /// is not behind.
    package static func isBehind(_ held: FeedPosition?, _ stored: FeedPosition?) -> Bool {
        guard let stored else { return held != nil }
        guard let held else { return true }
        return held.history != stored.history || stored.version > held.version
    }

    /// The one `Feed` of a name, loaded from the shared store on first use.
    func cached(_ name: String) async throws(StoreError) -> Feed {
        guard let shared else { return entry(name) }
        lastUsed[name] = clock()
        if let feed = feeds[name] { return feed }
        let task: Task<Feed, any Error>
        if let loading = loading[name] {
            task = loading
        } else {
            task = Task { [replayLimit, transport, metrics, storage] in
                shared.follow(name)
                let lostData: @Sendable () async -> Void = { [weak self] in await self?.storeLostData() }
                guard let stored = try await shared.read(name) else {
                    return Feed(name: name, replayLimit: replayLimit, transport: transport, metrics: metrics, store: shared, account: storage, lostData: lostData)
                }
                let snapshot = try WireCodec.decodeSnapshot(stored.snapshot)
                return Feed(restoring: stored, snapshot: snapshot, replayLimit: replayLimit, transport: transport, metrics: metrics, store: shared, account: storage, lostData: lostData)
            }
            loading[name] = task
        }
        let result = await task.result
        loading[name] = nil
        switch result {
        case .success(let feed):
            if let existing = feeds[name] { return existing }
            feeds[name] = feed
            if outage != nil { await tellOutage(feed) }
            // Commits published between the read and now found no feed here: read once more.
            await feed.queueRefresh()
            return feed
        case .failure(let error as StoreError):
            shared.unfollow(name)
            if feeds[name] == nil { lastUsed[name] = nil }
            throw error
        case .failure(let error):
            shared.unfollow(name)
            if feeds[name] == nil { lastUsed[name] = nil }
            throw .damaged(path: name, reason: "its stored snapshot does not decode: \(error)")
        }
    }

    /// Names and versions, sorted by name (with a shared store: every instance's feeds, asked of it).
    /// - Throws: the shared store's error when it cannot be reached (an instance's copies are not the list).
    public func list() async throws(StoreError) -> [(name: String, version: Int)] {
        if let shared {
            let names = try await shared.names()
            let positions = try await shared.positions(names)
            return names.compactMap { name in positions.feeds[name].map { (name, $0.version) } }
        }
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
        let result = try await write(name, snapshot: snapshot, viewState: viewState, hosted: hosted, options: FeedWriteOptions())
        return (result.created, result.version, result.operations)
    }

    /// ``put(_:snapshot:viewState:hosted:)`` with a write id, a fencing token or a basis (``FeedWriteOptions``).
    public func write(_ name: String, snapshot: WireSnapshot, viewState: [UInt8]? = nil, hosted: Bool = false, options: FeedWriteOptions) async throws(FeedWriteError) -> FeedWriteResult {
        let feed: Feed
        do { feed = try await cached(name) } catch { throw .store(error) }
        if hosted { await feed.markHosted() }
        return try await feed.write(snapshot, viewState: viewState, options: options)
    }

    /// With a shared store, the first answer of the write a client's `Idempotency-Key` committed on
    /// `name` (``FeedWriteResult/replayed``), else nil (also without a shared store, which keeps no keys).
    /// - Parameter request: the ``RequestDigest`` of the request sending the key.
    /// - Throws: ``FeedWriteError/idempotencyKeyReused`` when the key was kept for another request,
    ///   ``FeedWriteError/store(_:)`` when the store cannot be read.
    public func committedAnswer(_ name: String, writeID: String, request: String) async throws(FeedWriteError) -> FeedWriteResult? {
        guard let shared else { return nil }
        let previous: (version: Int, answer: [UInt8])?
        do { previous = try await shared.committedAnswer(name, writeID: writeID) } catch { throw .store(error) }
        guard let previous else { return nil }
        return try FeedWriteResult(replaying: previous.answer, version: previous.version, request: request)
    }

    /// The version and view-model state held for `name` (version 0: no feed): what a hosted view
    /// model's next change is computed from.
    public func basis(_ name: String) async throws(StoreError) -> FeedBasis {
        await (try cached(name)).basis
    }

    /// Removes a feed once the store has; its subscribers get `event: deleted`. False if there was none.
    /// - Parameter writeID: a client's `Idempotency-Key` (with a shared store, a retry gets the first
    ///   answer; the key of another request is refused, ``FeedWriteError/idempotencyKeyReused``).
    /// - Throws: ``FeedWriteError/store(_:)`` when the store could not forget it.
    public func delete(_ name: String, writeID: String? = nil) async throws(FeedWriteError) -> Bool {
        if shared != nil {
            let feed: Feed
            do { feed = try await cached(name) } catch { throw .store(error) }
            return try await feed.delete(writeID: writeID)
        }
        guard let feed = feeds[name] else { return false }
        return try await feed.delete()
    }

    func entry(_ name: String) -> Feed {
        if let feed = feeds[name] { return feed }
        let feed = Feed(name: name, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage)
        feeds[name] = feed
        return feed
    }
}
