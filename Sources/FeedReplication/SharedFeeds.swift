import DiffStreamJSON
import FeedCore
import FeedStorage
import Logging
import ServerSentEvents
import Synchronization
import Timekeeping

/// The copies a registry holds of a shared store's feeds (decision 0006): each loaded on first use
/// (followed first, then read, so no commit falls between), kept up to date by ``SharedFeedFollower``
/// and by a position check of every copy on a timer, dropped when nothing has needed it for
/// ``idleFeedLifetime`` seconds; outages told to every copy's subscribers, and lost data (the store's
/// epoch gone) recovered by emptying every copy and reading it again.
public actor SharedFeeds: FeedSource {
    /// The store several instances share.
    public nonisolated let store: any SharedFeedStore
    /// The copies held (changed only by ``hold(_:as:)``, which keeps ``memos`` in step).
    private(set) var feeds: [String: Feed] = [:]
    /// Each held copy's ``Feed/documentMemo``, for ``documentMemo(_:)`` without a hop.
    private nonisolated let memos = Mutex<[String: WireSnapshotMemo]>([:])
    let replayLimit: Int
    let transport: (any EventBroadcaster)?
    let metrics: FeedMetrics
    let storage: StorageAccount
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
    /// Where sharing says what happened: outages, lost data.
    nonisolated let logger: Logger
    /// Seconds after its last use (a request, a write, a subscription) that a copy nothing needs any
    /// more (``Feed/isIdle``) is dropped and no longer followed, so that an instance holds, follows and
    /// checks the feeds its users use, not every feed it was ever asked for.
    public nonisolated let idleFeedLifetime: Double
    /// When each held feed was last used, on ``clock``.
    var lastUsed: [String: Double] = [:]
    /// Monotonic seconds (injected for tests).
    let clock: @Sendable () -> Double

    /// - Parameter idleFeedLifetime: how long an unused copy of a feed is kept.
    /// - Parameter clock: monotonic seconds, for ``idleFeedLifetime``.
    public init(store: any SharedFeedStore, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, storage: StorageAccount,
                logger: Logger, idleFeedLifetime: Double = 60, clock: @escaping @Sendable () -> Double = MonotonicClock.now) {
        self.store = store
        self.replayLimit = replayLimit
        self.transport = transport
        self.metrics = metrics
        self.storage = storage
        self.logger = logger
        self.idleFeedLifetime = idleFeedLifetime
        self.clock = clock
    }

    /// The feed, if it exists, as ``FeedRegistry/read(_:)-(String)`` answers it.
    public func read(_ name: String) async throws(StoreError) -> Feed? {
        try await read([name])[0].get()
    }

    /// The feeds for a read or a new stream: the feeds' positions are checked in the store first and a
    /// copy that is behind (a commit or delete on another instance whose message is still on the way)
    /// read again, so the answer reflects every write acknowledged before it, on whichever instance.
    /// During an outage, the copies held (a feed not held is the store's error).
    /// - Complexity: one round trip to the store, plus a read of each feed not held or behind.
    public func read(_ names: [String]) async -> [Result<Feed?, StoreError>] {
        if let outage, names.allSatisfy({ feeds[$0] != nil }) {
            // The store is known to be down: the copies, without waiting for a call to time out.
            return await copies(names, or: .unreachable(url: store.location, reason: outage))
        }
        let call = askCommands()
        let positions: StorePositions
        do { positions = try await store.positions(names) } catch {
            await setCommandsDown(error.description, call: call)
            return await copies(names, or: error)
        }
        await setCommandsDown(nil, call: call)
        if !positions.intact { await storeLostData() }
        var found: [Result<Feed?, StoreError>] = []
        for name in names {
            // A name the store does not have and this instance does not hold is answered without following it,
            // so requests for names that do not exist cannot grow the cache or the subscriptions.
            if positions.intact, positions.feeds[name] == nil, feeds[name] == nil, loading[name] == nil {
                found.append(.success(nil))
                continue
            }
            do {
                let feed = try await feed(name)
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

    /// The one `Feed` of a name, loaded from the shared store on first use, marked used.
    public func feed(_ name: String) async throws(StoreError) -> Feed {
        lastUsed[name] = clock()
        if let feed = feeds[name] { return feed }
        let task: Task<Feed, any Error>
        if let loading = loading[name] {
            task = loading
        } else {
            task = Task { [store, replayLimit, transport, metrics, storage, logger] in
                store.follow(name)
                let lostData: @Sendable () async -> Void = { [weak self] in await self?.storeLostData() }
                let rewound: @Sendable (String, EventID, Int) -> Void = { [logger, kind = store.kind] name, id, held in
                    logger.error("\(kind) holds feed \(name) at version \(held) of history \(id.history), but a client resumed from version \(id.version) of it: if \(kind) was put back from an older copy, run 'diffstream restore --redis' so that no version is numbered twice (docs/deploy-redis.md, 'Restoring Redis from an older RDB or AOF'); the client gets a snapshot")
                }
                guard let stored = try await store.read(name) else {
                    return Feed(name: name, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage,
                                keeper: SharedFeedCopy(store: store, lostData: lostData, rewound: rewound))
                }
                let snapshot = try WireCodec.decodeSnapshot(stored.snapshot)
                return Feed(restoring: stored, snapshot: snapshot, replayLimit: replayLimit, transport: transport, metrics: metrics, store: store, account: storage,
                            keeper: SharedFeedCopy(store: store, lostData: lostData, rewound: rewound))
            }
            loading[name] = task
        }
        let result = await task.result
        loading[name] = nil
        switch result {
        case .success(let feed):
            if let existing = feeds[name] { return existing }
            hold(feed, as: name)
            if outage != nil { await tellOutage(feed) }
            // Commits published between the read and now found no feed here: read once more.
            await feed.queueRefresh()
            return feed
        case .failure(let error as StoreError):
            store.unfollow(name)
            if feeds[name] == nil { lastUsed[name] = nil }
            throw error
        case .failure(let error):
            store.unfollow(name)
            if feeds[name] == nil { lastUsed[name] = nil }
            throw .damaged(path: name, reason: "its stored snapshot does not decode: \(error)")
        }
    }

    /// Every instance's feeds and their versions, sorted by name, asked of the store (an instance's
    /// copies are not the list).
    public func list() async throws(StoreError) -> [(name: String, version: Int)] {
        let names = try await store.names()
        let positions = try await store.positions(names)
        return names.compactMap { name in positions.feeds[name].map { (name, $0.version) } }
    }

    /// Sharing stopped (shutdown; `SharedFeedFollower.stop()`, module `FeedReplication`): failures of
    /// calls still in flight are no longer outages.
    package func stopAnnouncing() {
        stopped = true
    }

    /// The copy of `name` held here, if any (a store's event for a feed not held is for no one here).
    package func held(_ name: String) -> Feed? {
        feeds[name]
    }

    /// Brings ``storage`` (`/metrics`' feeds and bytes) to what the shared store counted over every
    /// instance; nothing without one, or when it cannot be reached.
    public func refreshUsage() async {
        guard let usage = try? await store.usage() else { return }
        storage.setUsage(feeds: usage.feeds, bytes: usage.bytes)
    }

    /// The check `SharedFeedFollower`'s timer (module `FeedReplication`) runs (call it to check now).
    /// One pipeline of every held feed's position: a feed that is not where its copy is gets refreshed; an epoch that is not ours means the store lost its data; a failure is an outage.
    public func checkPositions() async {
        await dropIdleFeeds()
        let names = Array(feeds.keys)
        let positions: StorePositions
        let call = askCommands()
        do {
            positions = try await store.positions(names)
        } catch {
            await setCommandsDown(error.description, call: call)
            return
        }
        await setCommandsDown(nil, call: call)
        guard positions.intact else {
            await storeLostData()
            return
        }
        for name in names {
            guard let feed = feeds[name] else { continue }
            if await feed.position != positions.feeds[name] { await feed.queueRefresh() }
        }
    }

    /// Drops the copies that nothing has needed (``Feed/isIdle``) for ``idleFeedLifetime`` seconds, and
    /// stops following them; the next use reads the feed again. A copy in use counts as used now, so the
    /// time runs from when it was last needed (a stream that ends after an hour keeps the copy for the
    /// reconnect). Nothing is dropped during an outage: the copies are what new subscribers get then.
    /// Holds `feed` as the copy of `name` (nil: none), with its memo.
    private func hold(_ feed: Feed?, as name: String) {
        feeds[name] = feed
        memos.withLock { $0[name] = feed?.documentMemo }
    }

    public nonisolated func documentMemo(_ name: String) -> WireSnapshotMemo? {
        memos.withLock { $0[name] }
    }

    /// With a shared store, the store deletes (``FeedCopyKeeper/delete(writeID:of:)``): whatever the copy holds.
    package nonisolated func delete(_ name: String, writeID: String?) async throws(FeedWriteError) -> Bool {
        let feed: Feed
        do { feed = try await self.feed(name) } catch { throw .store(error) }
        return try await feed.delete(writeID: writeID)
    }

    package nonisolated func committedAnswer(_ name: String, writeID: String) async throws(StoreError) -> (version: Int, answer: [UInt8])? {
        try await store.committedAnswer(name, writeID: writeID)
    }

    /// Every copy keeps a hosted view model's state (the store does).
    package nonisolated func keepsViewState(_ name: String) -> Bool { true }

    /// The store holds the feeds: a registry of copies restores none (each is read on first use).
    package func restore(_ stored: StoredFeed, snapshot: WireSnapshot) {}

    /// A feed with a log of its own (a family member's store) is not a copy: refused with a shared store.
    package func adopt(_ name: String, restoring stored: StoredFeed?, log: any FeedLog, replayLimit: Int) throws(StoreError) -> Feed {
        throw .io(path: name, reason: "a feed with a store of its own cannot be a copy of a shared store's")
    }

    /// Nothing: copies are dropped when idle (``dropIdleFeeds()``).
    package func drop(_ name: String) {}

    func dropIdleFeeds() async {
        for (name, feed) in feeds {
            let idle = await feed.isIdle
            guard feeds[name] === feed else { continue }  // dropped or replaced during the hop
            let now = clock()
            guard idle else {
                lastUsed[name] = now
                continue
            }
            guard outage == nil else { continue }
            // A use during the hop (``feed(_:)``) moved `lastUsed` and keeps the copy.
            guard lastUsed[name, default: -.infinity] <= now - idleFeedLifetime else { continue }
            hold(nil, as: name)
            lastUsed[name] = nil
            metrics.removeFeed(name)
            store.unfollow(name)
        }
    }

    /// The feed to subscribe to for `feed`, marked used: `feed` itself, unless its copy was dropped as
    /// idle since it was looked up (then the copy held now, read again if need be). The API calls it
    /// right before subscribing, so that no subscription lands on a dropped copy, however long the
    /// request took between its lookup and its subscription.
    public func current(_ feed: Feed) async -> Feed {
        if feeds[feed.name] === feed {
            lastUsed[feed.name] = clock()
            return feed
        }
        return (try? await self.feed(feed.name)) ?? feed
    }

    /// Whether the shared store can be reached, holds this instance's data and takes writes (nil:
    /// ready), checked now: `GET /readyz`. Not ready while its events are down either (after a restart of the store, until
    /// the pub/sub connection is back): streams opened then would be told of the outage
    /// (``FeedRegistry/readiness()`` asks it).
    public func readiness() async -> String? {
        let call = askCommands()
        do {
            let positions = try await store.positions([])
            if !positions.intact {
                await storeLostData()
                return eventsDown
            }
            await setCommandsDown(nil, call: call)
            if let eventsDown { return eventsDown }  // commands answer, but commits from other instances do not arrive yet
            return await store.writeRefusal()  // it answers, but refuses writes (full): not an outage for the streams
        } catch {
            await setCommandsDown(error.description, call: call)
            return error.description
        }
    }

    /// Records why the store's commands fail (nil: they work), and tells subscribers when the store
    /// as a whole becomes unavailable or available again.
    func setCommandsDown(_ detail: String?, call: Int) async {
        guard call > commandsHeard else { return }  // a later call's result is recorded already
        commandsHeard = call
        let before = outage
        commandsDown = detail
        await announce(from: before)
    }

    /// The number of a call to the store's commands that starts now, for ``setCommandsDown(_:call:)``.
    func askCommands() -> Int {
        commandsAsked += 1
        return commandsAsked
    }

    /// Records why the store's events stopped (nil: they come again), as ``setCommandsDown(_:call:)``.
    package func setEventsDown(_ detail: String?) async {
        let before = outage
        eventsDown = detail
        await announce(from: before)
    }

    func announce(from before: String?) async {
        guard !stopped else { return }
        let detail = outage
        guard (detail == nil) != (before == nil) else { return }
        let kind = store.kind
        if let detail { logger.warning("\(kind) unavailable: \(detail)") } else { logger.info("\(kind) available again") }
        for feed in feeds.values { await tellOutage(feed) }
    }

    /// Brings `feed`'s outage to the registry's, as it is when the feed has taken it: another change
    /// during the hop (announced by a loop of its own that may have passed this feed already) is told
    /// too, so no feed is left with a stale outage.
    func tellOutage(_ feed: Feed) async {
        var told: String??
        while told != .some(outage) {
            let now = outage
            await feed.setOutage(now)
            told = .some(now)
        }
    }

    /// The shared store lost its data (a flushed database, an AOF gone): adopt its new epoch, end
    /// every subscription with `event: deleted`, and read each feed again (an old backup may hold it).
    package func storeLostData() async {
        if let losing {  // one at a time; a second caller waits for the first to finish
            await losing.value
            return
        }
        let task = Task { await self.recoverLostData() }
        losing = task
        await task.value
        losing = nil
    }

    func recoverLostData() async {
        logger.error("\(store.kind) lost its data (its epoch is gone or another): every feed starts a new history")
        let call = askCommands()
        do { try await store.adoptNewEpoch() } catch {
            await setCommandsDown(error.description, call: call)
            return
        }
        for feed in feeds.values {
            await feed.dropForLostData()
            await feed.queueRefresh()
        }
    }
}
