import CoreMetrics
import Metrics
import DiffStream
import DiffStreamJSON
import FeedStore
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
    /// What this feed is charged in the shared ``StorageAccount`` (0 while it does not exist).
    var storedBytes: Int { snapshotBytes + replayBytes }
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

    /// A feed that does not exist yet; the first ``publish(_:viewState:)`` creates it.
    init(name: String, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, account: StorageAccount? = nil) {
        self.name = name
        self.account = account
        self.history = EventID.newHistory()
        self.snapshot = WireSnapshot()
        self.version = 0
        self.replayLimit = max(0, replayLimit)
        self.transport = transport
        self.metrics = metrics
        self.store = store
    }

    /// A feed as it was stored: same history, version, snapshot and replay window.
    /// It is charged to `account` as it is, even past a limit (writes are then refused until there is room).
    init(restoring stored: StoredFeed, snapshot: WireSnapshot, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, account: StorageAccount? = nil) {
        self.name = stored.name
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
        account?.restoreFeed(bytes: snapshotBytes + replayBytes)
        self.viewState = stored.viewState
        self.transport = transport
        self.metrics = metrics
        self.store = store
    }

    /// True once created and until deleted.
    public var exists: Bool { version > 0 }

    /// The number of open subscriptions.
    public var subscriberCount: Int { subscribers.count + taggedSubscribers.count }

    /// The snapshot document (`GET /feeds/{feed}`).
    public func document() -> (version: Int, json: [UInt8]) {
        (version, FeedEvents.snapshotJSON(feed: name, version: version, snapshot: snapshot))
    }

    /// Marks the feed as hosted by the server: from now on it does not count against `--max-feeds`
    /// (if it already exists and was counted, say restored from the store, it stops counting).
    func markHosted() {
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
        await acquireWrite()
        defer { releaseWrite() }
        let encoded = store != nil || account != nil ? WireCodec.encode(new) : []
        if let account {
            do { try account.checkSnapshot(bytes: encoded.count) } catch { throw .limit(error) }
        }
        if version == 0 {
            let fresh = EventID.newHistory()
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
            return (true, 1, new.numberOfSections + new.numberOfItems)
        }
        let started = MonotonicClock.now()
        let batch = WireSnapshot.diff(from: snapshot, to: new)
        metrics.recordDiff(seconds: MonotonicClock.now() - started)
        guard !batch.isEmpty else {
            if let viewState, viewState != self.viewState {
                do { try await store?.commit(.viewState(name: name, bytes: viewState)) } catch { throw .store(error) }
                self.viewState = viewState
            }
            return (false, version, 0)
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
        metrics.recordBatch(name)
        let broadcastAt = ContinuousClock.now
        transport?.broadcast(payload, to: Array(subscribers.values)) {
            MetricHandles.shared.timer(MetricName.publishToLastWrite).record(duration: ContinuousClock.now - broadcastAt)
        }
        if !taggedSubscribers.isEmpty {
            transport?.broadcast(EventPayload(FeedEvents.namingFeedInID(event, feed: name)), to: Array(taggedSubscribers.values))
        }
        return (false, version, batch.operations.count)
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
    public func subscribe(_ stream: any EventSink, lastEventID: String?, tagged: Bool = false) {
        guard version > 0 else {
            stream.send(EventPayload(FeedEvents.deletedEvent(feed: name)))
            stream.close()
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
    func missedBatches(since lastEventID: String?) -> [EventPayload]? {
        guard let text = lastEventID, let id = EventID(text), id.history == history, id.version <= version else { return nil }
        if id.version == version { return [] }
        guard let first = replay.first, first.version <= id.version + 1 else { return nil }
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
    func delete() async throws(StoreError) -> Bool {
        await acquireWrite()
        defer { releaseWrite() }
        guard version > 0 else { return false }
        try await store?.commit(.delete(name: name))
        account?.releaseFeed(bytes: storedBytes, counted: !isHosted)
        version = 0
        snapshotPayload = nil
        taggedSnapshotPayload = nil
        snapshot = WireSnapshot()
        snapshotBytes = 0
        replay = []
        replayBytes = 0
        viewState = nil
        let payload = EventPayload(FeedEvents.deletedEvent(feed: name))
        let streams = Array(subscribers.values) + Array(taggedSubscribers.values)
        transport?.broadcast(payload, to: streams)
        for stream in streams { stream.close() }
        subscribers.removeAll()
        taggedSubscribers.removeAll()
        metrics.removeFeed(name)
        return true
    }

}
