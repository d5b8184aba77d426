import CoreMetrics
import Metrics
import DiffStream
import DiffStreamJSON
import FeedStorage
import HTTPCore

/// A named, versioned stream of snapshots: the current snapshot, its version, a window of recent
/// batches for resuming clients, and the subscribers.
///
/// The actor owns all of that. A change is diffed once and encoded once; the same ``EventPayload`` is
/// queued to every subscriber by one broadcast. Because subscribing and publishing both run on the
/// actor, a new subscriber's first event and the batches after it are never out of order.
public actor Feed {
    public nonisolated let name: String
    /// Random per incarnation of the feed: event ids from any other history are recognised as foreign.
    public private(set) var history: String
    public private(set) var snapshot: WireSnapshot
    /// 0 while the feed does not exist (not yet created, or deleted).
    public private(set) var version: Int
    private let replayLimit: Int
    private var replay: [(version: Int, payload: EventPayload)] = []
    /// Encoded bytes of the current snapshot, and of the payloads in `replay`.
    private var snapshotBytes = 0
    private var replayBytes = 0
    /// Redis was found to hold versions this copy served with other content (``rewrites(_:)``): no
    /// commit is applied on top of them until a refresh has replaced the copy with Redis's new history.
    private var rewritten = false
    /// What this feed is charged in the shared ``StorageAccount`` (0 while it does not exist).
    package var storedBytes: Int { snapshotBytes + replayBytes }
    private let account: StorageAccount?
    private var subscribers: [Int: any EventSink] = [:]
    /// The subscribers on multi-feed streams (`GET /events`): their events' ids name the feed
    /// (`id: NAME@ds1.…`), so they get the same events with that id, encoded once per event for all.
    private var taggedSubscribers: [Int: any EventSink] = [:]
    private let transport: (any EventBroadcaster)?
    private let metrics: FeedMetrics
    private let store: (any FeedStore)?
    /// The view-model state last stored with this feed (restored at start), or nil.
    public private(set) var viewState: [UInt8]?
    /// One write at a time: the holder diffs against the durable state, commits, then publishes.
    private var writeTurn = FIFOTurn()
    /// The current snapshot as an event, encoded once per version (of one history: a recreated feed
    /// starts again at 1) and shared by every subscriber that needs it: new ones, and lagging ones
    /// being caught up.
    private var snapshotPayload: (history: String, version: Int, payload: EventPayload)?
    /// The same, with the feed's name in its id, for multi-feed streams.
    private var taggedSnapshotPayload: (history: String, version: Int, payload: EventPayload)?
    /// Whether the server hosts this feed (a view model): it does not count against `--max-feeds`.
    private(set) var isHosted = false
    /// The store when several instances share it (Redis): it is the authority, and this feed a cache
    /// of it (docs/decisions/0003-redis.md). Nil: this feed is the authority.
    private let shared: (any SharedFeedStore)?
    /// Why the shared store cannot be reached, while it cannot (subscribers were told).
    private var outage: String?
    /// A refresh from the shared store is queued (one at a time is enough).
    private var refreshQueued = false
    /// A refresh reads the store again after restarting the feed's history (once).
    private var rereading = false
    /// Bumped whenever the copy changes outside a refresh (a commit taken, the feed ended): a refresh
    /// whose read raced with such a change reads again rather than apply what it read.
    private var generation = 0
    /// Called when the shared store lost its data (a commit found another epoch): the registry
    /// adopts the new epoch and drops every cached feed.
    private let lostData: (@Sendable () async -> Void)?

    /// A feed that does not exist yet; the first ``publish(_:viewState:)`` creates it.
    package init(name: String, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, account: StorageAccount? = nil,
         lostData: (@Sendable () async -> Void)? = nil) {
        self.name = name
        self.shared = store as? any SharedFeedStore
        self.lostData = lostData
        self.account = account
        self.history = RandomID.history()
        self.snapshot = WireSnapshot()
        self.version = 0
        self.replayLimit = max(0, replayLimit)
        self.transport = transport
        self.metrics = metrics
        self.store = store
    }

    /// A feed as it was stored: same history, version, snapshot and replay window.
    /// It is charged to `account` as it is, even past a limit (writes are then refused until there is room).
    package init(restoring stored: StoredFeed, snapshot: WireSnapshot, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, account: StorageAccount? = nil,
         lostData: (@Sendable () async -> Void)? = nil) {
        self.name = stored.name
        self.shared = store as? any SharedFeedStore
        self.lostData = lostData
        self.account = account
        self.history = stored.history
        self.snapshot = snapshot
        self.version = stored.version
        self.replayLimit = max(0, replayLimit)
        // Batches stored before events carried `history` get it, so a resuming client sees the same data.
        self.replay = stored.batches.suffix(self.replayLimit).map {
            ($0.version, EventPayload(FeedEvents.addingHistory($0.bytes, feed: stored.name, history: stored.history)))
        }
        self.snapshotBytes = stored.snapshot.count
        self.replayBytes = replay.reduce(0) { $0 + $1.payload.bytes.count }
        if shared == nil { account?.restoreFeed(bytes: snapshotBytes + replayBytes) }
        self.viewState = stored.viewState
        self.transport = transport
        self.metrics = metrics
        self.store = store
    }

    /// True once created and until deleted.
    public var exists: Bool { version > 0 }

    /// The number of open subscriptions.
    public var subscriberCount: Int { subscribers.count + taggedSubscribers.count }

    /// Nothing on this instance needs the copy now: no subscriber, not hosted, and not ``isBusy``.
    /// With a shared store, the registry drops idle copies (``FeedRegistry``).
    package var isIdle: Bool { subscriberCount == 0 && !isHosted && !isBusy }

    /// A write, a refresh from the shared store or a reread is under way or queued. A copy the registry
    /// has just loaded is busy until the refresh that follows the load (``FeedRegistry``) is done.
    package var isBusy: Bool { writeTurn.isTaken || refreshQueued || rereading }

    /// The snapshot document (`GET /feeds/{feed}`): `{"feed","history","version","sections","id"}`.
    public func document() -> (version: Int, json: [UInt8]) {
        let read = readDocument()
        return (read.id.version, read.json)
    }

    /// The snapshot document and the position it shows, read together (its `ETag` is the id).
    public func readDocument() -> (id: EventID, json: [UInt8]) {
        let id = EventID(history: history, version: version)
        return (id, FeedEvents.snapshotJSON(feed: name, history: history, version: version, snapshot: snapshot, id: id))
    }

    /// Marks the feed as hosted by the server: from now on it does not count against `--max-feeds`
    /// (if it already exists and was counted, say restored from the store, it stops counting).
    package func markHosted() {
        guard !isHosted else { return }
        isHosted = true
        if version > 0 { account?.exemptFeed() }
    }

    /// Creates the feed, or replaces its snapshot. The order is: diff, make durable (the store's
    /// commit returns), update, then broadcast; so no subscriber sees a version a crash could take back.
    /// Content equal to the current one makes no version and no event (only a changed `viewState` is
    /// stored then).
    ///
    /// With a ``StorageAccount``, the change (the new snapshot, encoded, plus the replay window with the
    /// new batch) is charged to it before anything is stored; a write that would pass a
    /// ``StorageLimits`` limit is refused and changes nothing.
    /// - Returns: whether the feed was created, its version and the number of operations.
    /// - Throws: the store's error or the limit passed; nothing changed then.
    @discardableResult
    public func publish(_ new: WireSnapshot, viewState: [UInt8]? = nil) async throws(FeedWriteError) -> (created: Bool, version: Int, operations: Int) {
        let result = try await write(new, viewState: viewState, options: FeedWriteOptions())
        return (result.created, result.version, result.operations)
    }

    /// ``publish(_:viewState:)`` with a write id, a lease's fencing token or the basis a view model's
    /// change was computed from (``FeedWriteOptions``); those matter with a shared store.
    ///
    /// With a shared store (Redis), the batch is computed against this instance's copy and committed
    /// with that version as its base; a lost race (another instance wrote first) brings the copy up
    /// to date, sends subscribers what they missed, and computes again (bounded). A write id already
    /// committed gets its first answer back (``FeedWriteResult/replayed``) and writes nothing.
    public func write(_ new: WireSnapshot, viewState: [UInt8]?, options: FeedWriteOptions) async throws(FeedWriteError) -> FeedWriteResult {
        await acquireWrite()
        defer { releaseWrite() }
        if let shared { return try await writeShared(shared, new, viewState: viewState, options: options) }
        let encoded = store != nil || account != nil ? WireCodec.encode(new) : []
        if let account {
            do { try account.checkSnapshot(bytes: encoded.count) } catch { throw .limit(error) }
        }
        if version == 0 {
            let fresh = RandomID.history()
            if let account {
                do { try account.admitFeed(bytes: encoded.count, counted: !isHosted) } catch { throw .limit(error) }
            }
            if let store {
                do {
                    try await store.commit(.put(name: name, history: fresh, version: 1, snapshot: encoded, batch: nil, keepFrom: 2, viewState: viewState))
                } catch {
                    account?.releaseFeed(bytes: encoded.count, counted: !isHosted)
                    throw .store(error)
                }
            }
            history = fresh
            snapshot = new
            snapshotBytes = encoded.count
            replayBytes = 0
            version = 1
            replay = []
            if let viewState { self.viewState = viewState }
            metrics.setSubscribers(name, subscriberCount)
            return FeedWriteResult(created: true, version: 1, operations: new.numberOfSections + new.numberOfItems)
        }
        let started = MonotonicClock.now()
        let batch = WireSnapshot.diff(from: snapshot, to: new)
        metrics.recordDiff(seconds: MonotonicClock.now() - started)
        guard !batch.isEmpty else {
            if let viewState, viewState != self.viewState {
                do { try await store?.commit(.viewState(name: name, bytes: viewState)) } catch { throw .store(error) }
                self.viewState = viewState
            }
            return FeedWriteResult(created: false, version: version, operations: 0)
        }
        let next = version + 1
        let event = FeedEvents.batchEvent(feed: name, id: EventID(history: history, version: next), batch: batch)
        let payload = EventPayload(event)
        // The window after this batch, worked out without copying it (the copy cost O(window) per
        // publish); `replay` itself changes only once the batch is stored.
        var nextReplayBytes = replayBytes
        var dropped = 0
        if replayLimit > 0 {
            nextReplayBytes += event.count
            if replay.count + 1 > replayLimit + replayLimit / 4 {
                dropped = replay.count + 1 - replayLimit  // ≤ replay.count, as replayLimit ≥ 1
                nextReplayBytes -= replay.prefix(dropped).reduce(0) { $0 + $1.payload.bytes.count }
            }
        }
        // The store keeps the same window: it trims only when this one does (every replayLimit / 4
        // batches), so most writes add a batch row and delete none (fewer pages per commit).
        let firstKept = dropped < replay.count ? replay[dropped].version : next
        let charged = storedBytes, charge = encoded.count + nextReplayBytes
        if let account {
            do { try account.charge(from: charged, to: charge) } catch { throw .limit(error) }
        }
        if let store {  // encoded only for a store or an account: `--data none` without limits pays nothing
            do {
                try await store.commit(.put(name: name, history: history, version: next, snapshot: encoded,
                                            batch: replayLimit > 0 ? StoredBatch(version: next, bytes: event) : nil,
                                            keepFrom: firstKept, viewState: viewState))
            } catch {
                account?.refund(from: charge, to: charged)
                throw .store(error)
            }
        }
        snapshot = new
        snapshotBytes = encoded.count
        version = next
        if let viewState { self.viewState = viewState }
        if replayLimit > 0 {
            replay.append((next, payload))
            if dropped > 0 { replay.removeFirst(dropped) }  // every replayLimit / 4 batches: amortised O(1)
        }
        replayBytes = nextReplayBytes
        broadcastBatch(event, payload)
        return FeedWriteResult(created: false, version: version, operations: batch.operations.count)
    }

    /// Sends a new batch (`event`, encoded once as `payload`) to every subscriber: as it is, and with
    /// the feed's name in its id to the multi-feed streams' slots.
    private func broadcastBatch(_ event: [UInt8], _ payload: EventPayload) {
        metrics.recordBatch(name)
        let broadcastAt = MonotonicClock.now()
        transport?.broadcast(payload, to: Array(subscribers.values)) {
            MetricHandles.shared.timer(MetricName.publishToLastWrite).recordSeconds(MonotonicClock.now() - broadcastAt)
        }
        if !taggedSubscribers.isEmpty {
            transport?.broadcast(EventPayload(FeedEvents.namingFeedInID(event, feed: name)), to: Array(taggedSubscribers.values))
        }
    }

    private func acquireWrite() async {
        if !writeTurn.tryTake() { await withCheckedContinuation { writeTurn.enqueue($0) } }
    }

    /// Hands the write turn to the next waiting writer (first come, first served), or frees it.
    private func releaseWrite() {
        writeTurn.pass()
    }

    /// Adds a subscriber. It first gets either the batches it missed since `lastEventID` (when that id
    /// is ours and still in the replay window; none when it is the current one) or a fresh snapshot.
    /// (The stream's first block, `retry:` and the heartbeat announcement, is the API's.)
    ///
    /// - Parameter tagged: the subscriber is one feed of a multi-feed stream: its events' ids are
    ///   `NAME@ds1.<history>.<version>`, and `lastEventID` is the part after the `@`.
    public func subscribe(_ stream: any EventSink, lastEventID: String?, tagged: Bool = false) async {
        // A client that saw a later version on another instance than this copy holds (the store's
        // events are on their way): bring the copy up to date first, so it resumes with batches.
        if let shared, let text = lastEventID, let id = EventID(text), id.history == history, id.version > version {
            await acquireWrite()
            let readError = await refreshFromStore(shared)
            releaseWrite()
            if readError != nil, id.history == history, id.version > version, version > 0 {
                // Redis cannot be reached and this copy is behind the client: send nothing older than
                // what it holds; the refresh after the outage brings it (and the batches it has, which
                // it skips as duplicates). Told `unavailable` only during a known outage, which ends
                // with `available`; a one-off failure is read again at once.
                if tagged { taggedSubscribers[stream.id] = stream } else { subscribers[stream.id] = stream }
                if let outage {
                    stream.send(EventPayload(FeedEvents.unavailableEvent(feed: name, detail: outage)))
                } else {
                    queueRefresh()
                }
                watch(stream)
                return
            }
        }
        guard version > 0 else {
            stream.end(with: EventPayload(FeedEvents.deletedEvent(feed: name)))
            return
        }
        if let missed = missedBatches(since: lastEventID) {
            if !missed.isEmpty {
                let bytes = missed.flatMap(\.bytes)
                stream.send(EventPayload(tagged ? FeedEvents.namingFeedInID(bytes, feed: name) : bytes))
            }
        } else {
            stream.send(currentSnapshotPayload(tagged: tagged))
        }
        if tagged { taggedSubscribers[stream.id] = stream } else { subscribers[stream.id] = stream }
        if let outage { stream.send(EventPayload(FeedEvents.unavailableEvent(feed: name, detail: outage))) }
        watch(stream)
    }

    /// Counts a new subscriber and hands its end and its catch-up requests to the feed.
    private func watch(_ stream: any EventSink) {
        metrics.setSubscribers(name, subscriberCount)
        let id = stream.id
        stream.onTermination { [weak self] in
            Task { await self?.unsubscribe(id) }
        }
        stream.onResync { [weak self] stream in
            Task { await self?.resync(stream) }
        }
    }

    /// The replayed batches for a resuming client, or nil if it needs a snapshot.
    package func missedBatches(since lastEventID: String?) -> [EventPayload]? {
        guard let text = lastEventID, let id = EventID(text), id.history == history, id.version <= version else { return nil }
        if id.version == version { return [] }
        // The window is the last `replayLimit` batches (more may be held between trims).
        guard version - id.version <= replayLimit, let first = replay.first, first.version <= id.version + 1 else { return nil }
        return replay.filter { $0.version > id.version }.map(\.payload)
    }

    /// A subscriber fell behind and has drained its queue: catch it up with a fresh snapshot.
    private func resync(_ stream: any EventSink) {
        let tagged = taggedSubscribers[stream.id] != nil
        guard tagged || subscribers[stream.id] != nil else { return }
        metrics.recordResync()
        stream.resume(with: currentSnapshotPayload(tagged: tagged))
    }

    /// The snapshot event of the current version, encoded on first use (each form once).
    private func currentSnapshotPayload(tagged: Bool) -> EventPayload {
        if tagged {
            if let cached = taggedSnapshotPayload, cached.version == version, cached.history == history { return cached.payload }
            let payload = EventPayload(FeedEvents.namingFeedInID(currentSnapshotPayload(tagged: false).bytes, feed: name))
            taggedSnapshotPayload = (history, version, payload)
            return payload
        }
        if let cached = snapshotPayload, cached.version == version, cached.history == history { return cached.payload }
        let event = FeedEvents.snapshotEvent(feed: name, id: EventID(history: history, version: version), snapshot: snapshot)
        let payload = EventPayload(event)
        snapshotPayload = (history, version, payload)
        return payload
    }

    private func unsubscribe(_ id: Int) {
        // Not there: already ended by `delete()`, whose metrics entry must stay removed.
        guard subscribers.removeValue(forKey: id) != nil || taggedSubscribers.removeValue(forKey: id) != nil else { return }
        metrics.setSubscribers(name, subscriberCount)
    }

    /// Deletes the feed once the store has (durably) forgotten it, then ends every subscription with
    /// `event: deleted`. False if it did not exist.
    /// - Throws: ``FeedWriteError/store(_:)``, or ``FeedWriteError/idempotencyKeyReused`` when a shared
    ///   store kept `writeID` for another request.
    package func delete(writeID: String? = nil) async throws(FeedWriteError) -> Bool {
        await acquireWrite()
        defer { releaseWrite() }
        if let shared {
            // Whatever this copy holds, the store decides (another instance may have created it).
            let id = writeID ?? RandomID.perWrite()
            let request = writeID == nil ? nil : RequestDigest.of("DELETE")
            for _ in 0..<Self.maxSharedAttempts {
                let outcome: SharedCommitResult
                do {
                    outcome = try await shared.commit(.delete(name: name), base: 0, baseHistory: nil, writeID: id, clientKey: writeID != nil, fence: nil,
                                                      answer: FeedWriteResult(created: false, version: 0, operations: 0).answer(request: request), expectedState: nil, counted: !isHosted)
                } catch { throw .store(error) }
                switch outcome {
                case .committed(let existed, let answer, let first):
                    if first {
                        if version > 0 { endEverySubscription() }
                    } else {
                        _ = try FeedWriteResult(replaying: answer, version: existed, request: request)  // the key's first request was a delete too
                        await refreshFromStore(shared)  // a retry: the first answer; the feed may exist again since
                    }
                    return existed == 1
                case .notCommitted:
                    continue
                case .lostData:
                    await lostData?()
                case .conflict, .fenced, .limit:
                    return false  // not answers a delete gets
                }
            }
            throw .store(.io(path: name, reason: "the delete could not be settled after \(Self.maxSharedAttempts) attempts"))
        }
        guard version > 0 else { return false }
        do { try await store?.commit(.delete(name: name)) } catch { throw .store(error) }
        account?.releaseFeed(bytes: storedBytes, counted: !isHosted)
        endEverySubscription()
        return true
    }

    /// The feed is gone: every subscription ends with `event: deleted`, and the copy is emptied.
    private func endEverySubscription() {
        generation &+= 1
        rewritten = false
        version = 0
        snapshotPayload = nil
        taggedSnapshotPayload = nil
        snapshot = WireSnapshot()
        snapshotBytes = 0
        replay = []
        replayBytes = 0
        viewState = nil
        let payload = EventPayload(FeedEvents.deletedEvent(feed: name))
        // Each ends with it, even one that fell behind (it would drop a broadcast event).
        for stream in Array(subscribers.values) + Array(taggedSubscribers.values) { stream.end(with: payload) }
        subscribers.removeAll()
        taggedSubscribers.removeAll()
        metrics.removeFeed(name)
    }

    // MARK: A cache of a shared store (Redis)


    /// The most attempts of one write that lose a race to another instance before it is refused. A
    /// loser reads again while the winner may already send its next write, so under a storm on one
    /// feed an instance can lose several races in a row: with three instances about 2 in 3 each, which
    /// 16 attempts would make 1 in 700 writes refused, and 64 about 1 in 10^11.
    package static let maxSharedAttempts = 64

    /// ``write(_:viewState:options:)`` against a shared store; the caller holds the write turn.
    private func writeShared(_ shared: any SharedFeedStore, _ new: WireSnapshot, viewState: [UInt8]?, options: FeedWriteOptions) async throws(FeedWriteError) -> FeedWriteResult {
        let encoded = WireCodec.encode(new)
        if let account {
            do { try account.checkSnapshot(bytes: encoded.count) } catch { throw .limit(error) }
        }
        // Only a client's key is kept for retries, so only its request is digested.
        let request = options.writeID == nil ? nil : options.request ?? RequestDigest.of("PUT", encoded)
        if let key = options.writeID {
            // A client's retry: its first answer, before anything is computed (the content may equal
            // the current one by now, which alone would answer "nothing changed").
            let previous: (version: Int, answer: [UInt8])?
            do { previous = try await shared.committedAnswer(name, writeID: key) } catch { throw .store(error) }
            if let previous { return try FeedWriteResult(replaying: previous.answer, version: previous.version, request: request) }
        }
        let writeID = options.writeID ?? RandomID.perWrite()
        for _ in 0..<Self.maxSharedAttempts {
            // Versions this copy served were numbered again in Redis (``rewrites(_:)``): nothing is
            // diffed from them until the copy is Redis's new history.
            if rewritten {
                if let error = await refreshFromStore(shared) { throw .store(error) }
                if options.basis != nil { throw .conflict }
                continue
            }
            if let basis = options.basis, basis.version != version { throw .conflict }
            let (base, baseHistory) = (version, history)
            let write: FeedWrite
            var event: [UInt8] = []
            var result: FeedWriteResult
            if base == 0 {
                let fresh = RandomID.history()
                write = .put(name: name, history: fresh, version: 1, snapshot: encoded, batch: nil, keepFrom: 2, viewState: viewState)
                result = FeedWriteResult(created: true, version: 1, operations: new.numberOfSections + new.numberOfItems)
            } else {
                let started = MonotonicClock.now()
                let batch = WireSnapshot.diff(from: snapshot, to: new)
                metrics.recordDiff(seconds: MonotonicClock.now() - started)
                if batch.isEmpty {
                    // A view model's change (it has a basis) commits its state even when it equals the
                    // copy's: the script compares it with Redis's, which the position alone does not say.
                    guard let viewState, viewState != self.viewState || options.basis != nil else {
                        // Nothing to commit, but this copy may be behind the store (another instance's
                        // commit or delete not yet heard): answer only once the store is where it is.
                        let position: StorePositions
                        do { position = try await shared.positions([name]) } catch { throw .store(error) }
                        guard position.intact else {
                            await lostData?()
                            if options.basis != nil { throw .conflict }
                            continue
                        }
                        guard position.feeds[name] == FeedPosition(history: baseHistory, version: base) else {
                            if let error = await refreshFromStore(shared) { throw .store(error) }
                            if options.basis != nil { throw .conflict }
                            continue
                        }
                        let unchanged = FeedWriteResult(created: false, version: base, operations: 0)
                        // A client's key is answered the same on a retry, even if the feed changes meanwhile.
                        if let key = options.writeID {
                            let earlier: (version: Int, answer: [UInt8])?
                            do { earlier = try await shared.recordAnswer(name, writeID: key, version: base, answer: unchanged.answer(request: request)) } catch { throw .store(error) }
                            if let earlier { return try FeedWriteResult(replaying: earlier.answer, version: earlier.version, request: request) }
                        }
                        return unchanged
                    }
                    write = .viewState(name: name, bytes: viewState)
                    result = FeedWriteResult(created: false, version: base, operations: 0)
                } else {
                    event = FeedEvents.batchEvent(feed: name, id: EventID(history: history, version: base + 1), batch: batch)
                    write = .put(name: name, history: history, version: base + 1, snapshot: encoded,
                                 batch: StoredBatch(version: base + 1, bytes: event), keepFrom: 0, viewState: viewState)  // published even with no window
                    result = FeedWriteResult(created: false, version: base + 1, operations: batch.operations.count)
                }
            }
            let outcome: SharedCommitResult
            do {
                outcome = try await shared.commit(write, base: base, baseHistory: baseHistory, writeID: writeID, clientKey: options.writeID != nil, fence: options.fence, answer: result.answer(request: request),
                                                  expectedState: options.basis.map { $0.state ?? [] }, counted: !isHosted)
            } catch {
                // The outcome may be unknown (the store could not settle it): the commit may be in the
                // store, and this instance skips its own published commits, so read the feed again.
                queueRefresh()
                throw .store(error)
            }
            switch outcome {
            case .committed(let version, let answer, let first):
                guard first else {
                    let replayed = try FeedWriteResult(replaying: answer, version: version, request: request)
                    // This instance skips its own published commits: read what the first commit left
                    // (a view state keeps the version, so the version alone cannot say).
                    await refreshFromStore(shared)
                    return replayed
                }
                if case .viewState = write {
                    // Another instance's commit came first (its message was taken before this answer):
                    // the store has this state with that commit; read it rather than guess.
                    if baseHistory == history, version == self.version { self.viewState = viewState } else { queueRefresh() }
                } else {
                    let history: String = if case .put(_, let history, _, _, _, _, _) = write { history } else { self.history }
                    if !applyCommit(history: history, version: version, snapshot: new, encodedBytes: encoded.count, event: event, state: viewState) {
                        queueRefresh()  // committed, but not on what this copy holds (a rewrite found meanwhile): Redis's state reaches the subscribers
                    }
                }
                return result
            case .conflict:
                // A store that cannot be read now cannot say what to compute against: its error, not
                // a conflict after every attempt.
                if let error = await refreshFromStore(shared) { throw .store(error) }
                if options.basis != nil { throw .conflict }
            case .notCommitted:
                continue
            case .lostData:
                await lostData?()
                if options.basis != nil { throw .conflict }
            case .fenced:
                throw .fenced
            case .limit(let feeds, _, let most):
                let exceeded = StorageLimitExceeded(limit: feeds ? .maxFeeds : .maxStoreBytes, value: most, needed: feeds ? most + 1 : encoded.count)
                throw .limit(account?.refuse(exceeded) ?? exceeded)
            }
        }
        throw .conflict
    }

    /// Takes a commit into the copy and sends its batch to the subscribers: when it is the next version
    /// of this history, or it creates the feed. A version already here is ignored (a commit arrives
    /// twice: as this instance's answer and through the store's events).
    /// - Returns: false when it does not follow (a gap, or another history): the copy must be refreshed.
    private func applyCommit(history: String, version: Int, snapshot new: WireSnapshot, encodedBytes: Int, event: [UInt8], state: [UInt8]?) -> Bool {
        guard !rewritten else { return false }
        if self.version > 0, history == self.history, version <= self.version { return true }
        let creates = self.version == 0 && version == 1
        guard creates || (history == self.history && version == self.version + 1) else { return false }
        generation &+= 1
        self.history = history
        self.version = version
        snapshot = new
        snapshotBytes = encodedBytes
        if let state { viewState = state }
        if creates {
            replay = []
            replayBytes = 0
            metrics.setSubscribers(name, subscriberCount)
            return true
        }
        guard !event.isEmpty else { return true }
        let payload = EventPayload(event)
        if replayLimit > 0 {
            replay.append((version, payload))
            replayBytes += event.count
            if replay.count > replayLimit + replayLimit / 4 {
                let dropped = replay.count - replayLimit
                replayBytes -= replay.prefix(dropped).reduce(0) { $0 + $1.payload.bytes.count }
                replay.removeFirst(dropped)
            }
        }
        broadcastBatch(event, payload)
        return true
    }

    /// A commit of this feed by any instance, from the shared store's events. One that follows is
    /// taken at once (no suspension, so events are taken in the order they come); a gap or another
    /// history queues a refresh from the store. Never skipped.
    package func remoteCommit(history: String, version: Int, batch: [UInt8], snapshot encoded: [UInt8]?, state: [UInt8]?) {
        guard let encoded else {  // the view-model state alone changed
            if history == self.history, version == self.version, let state { viewState = state }
            return
        }
        if self.version > 0, history == self.history, version <= self.version {
            // A version this copy holds, with other content: Redis's history was rewritten past it.
            if rewrites([StoredBatch(version: version, bytes: batch)]) {
                rewritten = true
                queueRefresh()
            }
            return
        }
        guard let decoded = try? WireCodec.decodeSnapshot(encoded),
              applyCommit(history: history, version: version, snapshot: decoded, encodedBytes: encoded.count, event: batch, state: state) else {
            queueRefresh()
            return
        }
    }

    /// Whether `batches` (of this copy's history) hold a version this copy's window holds too, with
    /// other content: Redis went back past versions this instance served (an older backup, a lagging
    /// replica promoted) and another instance numbered them again. Nothing can tell for a version
    /// outside the window (`--replay 0`).
    private func rewrites(_ batches: [StoredBatch]) -> Bool {
        guard let first = replay.first?.version else { return false }
        return batches.contains { batch in
            let index = batch.version - first
            guard !batch.bytes.isEmpty, index >= 0, index < replay.count, replay[index].version == batch.version else { return false }
            return replay[index].payload.bytes != batch.bytes
        }
    }

    /// Another instance deleted the feed (of `history`): its subscriptions end as for a delete here.
    package func remoteDelete(history: String) {
        guard version > 0, history == self.history else { return }
        endEverySubscription()
    }

    /// This copy's place, for the registry's position checks.
    package var position: FeedPosition? { version > 0 ? FeedPosition(history: history, version: version) : nil }

    /// Refreshes from the store in turn with the writes, unless one is queued already.
    package func queueRefresh() {
        guard shared != nil, !refreshQueued else { return }
        refreshQueued = true
        Task { await self.refreshInTurn() }
    }

    /// Refreshes from the shared store now, in turn with the writes.
    /// - Returns: the read's error when the store could not be read (the copy is as it was), else nil.
    @discardableResult
    package func refreshNow() async -> StoreError? {
        await refreshInTurn()
    }

    @discardableResult
    private func refreshInTurn() async -> StoreError? {
        await acquireWrite()
        defer { releaseWrite() }
        refreshQueued = false
        guard let shared else { return nil }
        return await refreshFromStore(shared)
    }

    /// Reads the feed from the shared store and brings the copy and its subscribers to it: the
    /// batches they missed when the store's window still holds them, else a snapshot of the store's
    /// state (another history: a feed deleted and created again, or data lost), or `event: deleted`
    /// when the feed is gone. Redis being unreachable leaves the copy as it is (the registry's
    /// position check tries again). The caller holds the write turn.
    /// - Returns: the read's error when the store could not be read (nothing changed), else nil.
    @discardableResult
    private func refreshFromStore(_ shared: any SharedFeedStore) async -> StoreError? {
        let (readFrom, readAt, readGeneration) = (history, version, generation)
        let stored: StoredFeed?
        do { stored = try await shared.read(name) } catch { return error }
        // Commits or a delete reached the copy during the read: what was read may be older than they
        // are. Further along the copy's history, it is applied below; at or behind the copy's version,
        // the copy has it already; no feed or another history (a create read as "no feed", a
        // recreated history read as the old one) is read again.
        if generation != readGeneration {
            guard let stored, stored.history == history else {
                queueRefresh()
                return nil
            }
            if stored.version <= version { return nil }
        }
        guard let stored else {
            if version > 0 { endEverySubscription() }
            return nil
        }
        if stored.history == history, stored.version == version, !rewrites(stored.batches) {
            viewState = stored.viewState
            return nil
        }
        // Commits that arrived during the read moved the copy past what was read: never go back.
        if stored.history == history, stored.version < version, readFrom == history, stored.version >= readAt { return nil }
        // Redis holds an older version than this instance served (an old backup, a lagging replica),
        // or versions it served numbered again with other content (another instance wrote on from
        // there): the feed gets a new history there, so no version is numbered twice; every copy resyncs.
        if stored.history == history, readFrom == history, stored.version < readAt || rewrites(stored.batches) {
            rewritten = true
            _ = try? await shared.restartHistory(name, from: stored.history, at: stored.version, to: RandomID.history())
            if !rereading {
                rereading = true
                await refreshFromStore(shared)
                rereading = false
            }
            return nil
        }
        guard let decoded = try? WireCodec.decodeSnapshot(stored.snapshot) else { return nil }
        rewritten = false
        let window = stored.batches.suffix(replayLimit).map { ($0.version, EventPayload($0.bytes)) }
        let continues = version > 0 && stored.history == history && stored.version > version
            && (stored.batches.first.map { $0.version <= version + 1 } ?? false)
        let missed = continues ? stored.batches.filter { $0.version > version }.flatMap(\.bytes) : []
        let wasEmpty = version == 0
        history = stored.history
        version = stored.version
        snapshot = decoded
        snapshotBytes = stored.snapshot.count
        viewState = stored.viewState
        replay = window
        replayBytes = window.reduce(0) { $0 + $1.1.bytes.count }
        if wasEmpty { return nil }
        if continues {
            transport?.broadcast(EventPayload(missed), to: Array(subscribers.values))
            if !taggedSubscribers.isEmpty {
                transport?.broadcast(EventPayload(FeedEvents.namingFeedInID(missed, feed: name)), to: Array(taggedSubscribers.values))
            }
        } else {
            metrics.recordResync()
            if !subscribers.isEmpty { transport?.broadcast(currentSnapshotPayload(tagged: false), to: Array(subscribers.values)) }
            if !taggedSubscribers.isEmpty { transport?.broadcast(currentSnapshotPayload(tagged: true), to: Array(taggedSubscribers.values)) }
        }
        return nil
    }

    /// The shared store lost its data: every subscription ends with `event: deleted` and the copy is
    /// emptied; what the store holds next (nothing, or an old backup) is read on the next refresh.
    package func dropForLostData() {
        if version > 0 { endEverySubscription() }
        history = RandomID.history()
    }

    /// The shared store cannot be reached (`detail`), or can again (nil): subscribers are told once
    /// per outage (`event: unavailable` / `event: available`); after it is back, the copy is refreshed.
    package func setOutage(_ detail: String?) {
        let changes = (detail == nil) != (outage == nil)
        outage = detail
        guard changes else { return }
        let event = detail.map { FeedEvents.unavailableEvent(feed: name, detail: $0) } ?? FeedEvents.availableEvent(feed: name)
        let streams = Array(subscribers.values) + Array(taggedSubscribers.values)
        if !streams.isEmpty { transport?.broadcast(EventPayload(event), to: streams) }
        if detail == nil { queueRefresh() }
    }

    /// The version and view-model state this copy holds: what a hosted view model computes its next
    /// change from (``FeedWriteOptions/basis``).
    package var basis: FeedBasis { FeedBasis(version: version, state: viewState) }
}

/// What a write carries beyond its content, for a shared store (Redis).
public struct FeedWriteOptions: Sendable, Equatable {
    /// The write's id: a client's `Idempotency-Key`. A shared store commits one id once; a retry gets
    /// the first answer. Nil: one is drawn.
    public var writeID: String?
    /// A lease's fencing token (a hosted view model's source, run on one instance at a time): the
    /// store refuses the write once another instance holds the lease.
    public var fence: String?
    /// The version and view-model state the change was computed from: the store must still hold
    /// them, else ``FeedWriteError/conflict`` (compute again). Nil: the write is a whole snapshot,
    /// which the feed diffs again against whatever version won.
    public var basis: FeedBasis?
    /// A digest of the request that sent ``writeID`` (``RequestDigest``), kept with its answer: a later
    /// request with the same key and another digest is refused (``FeedWriteError/idempotencyKeyReused``)
    /// instead of getting the first answer. Nil: a digest of the snapshot written (a `PUT`).
    public var request: String?

    public init(writeID: String? = nil, fence: String? = nil, basis: FeedBasis? = nil, request: String? = nil) {
        self.writeID = writeID
        self.fence = fence
        self.basis = basis
        self.request = request
    }
}

/// A feed's version and view-model state (nil: none stored).
public struct FeedBasis: Sendable, Equatable {
    public var version: Int
    public var state: [UInt8]?
    public init(version: Int, state: [UInt8]?) {
        self.version = version
        self.state = state
    }
}

/// What a write did.
public struct FeedWriteResult: Sendable, Equatable {
    /// The write created the feed.
    public var created: Bool
    /// The version the feed is at after it.
    public var version: Int
    /// The operations of its batch (0: the snapshot did not change, no new version).
    public var operations: Int
    /// A shared store had committed this write id before: this is that write's answer, and nothing
    /// was written now.
    public var replayed = false

    public init(created: Bool, version: Int, operations: Int, replayed: Bool = false) {
        self.created = created
        self.version = version
        self.operations = operations
        self.replayed = replayed
    }

    /// As a shared store keeps it with the write id: `<created 0|1> <version> <operations> [<request>]`,
    /// where `request` is the ``FeedWriteOptions/request`` digest of the request that used the key.
    package func answer(request: String?) -> [UInt8] {
        Array("\(created ? 1 : 0) \(version) \(operations)\(request.map { " " + $0 } ?? "")".utf8)
    }

    /// The first answer of a write id committed before, kept by a shared store, as a retry gets it.
    /// - Throws: ``FeedWriteError/idempotencyKeyReused`` when the answer was kept for another request
    ///   than `request` (both digests known and different).
    package init(replaying answer: [UInt8], version: Int, request: String?) throws(FeedWriteError) {
        let kept = Self.parse(answer)
        if let request, let first = kept?.request, first != request { throw .idempotencyKeyReused }
        self = kept?.result ?? FeedWriteResult(created: false, version: version, operations: 0)
        replayed = true
    }

    /// The answer a shared store kept and the request digest kept with it; nil when it is not one.
    package static func parse(_ answer: [UInt8]) -> (result: FeedWriteResult, request: String?)? {
        let parts = String(decoding: answer, as: UTF8.self).split(separator: " ")
        guard parts.count == 3 || parts.count == 4, let created = Int(parts[0]), let version = Int(parts[1]), let operations = Int(parts[2]) else { return nil }
        return (FeedWriteResult(created: created == 1, version: version, operations: operations), parts.count == 4 ? String(parts[3]) : nil)
    }
}
