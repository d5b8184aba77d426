import DiffStreamJSON
import FeedCore
import FeedStorage
import ServerSentEvents
import Timekeeping

/// What keeps one ``Feed`` a copy of a shared store's feed (decision 0006): the store decides every
/// commit, and this keeper holds what the copy needs for that besides the feed's own state, and reads
/// the store. It runs only on its feed's actor (``FeedCopyKeeper``). It never sets the feed's state:
/// a write goes through the feed's one write path, and what the store holds reaches the feed through
/// its two entries, ``Feed/applyNext(history:version:snapshot:encodedBytes:event:state:window:)`` (the next
/// commit) and ``Feed/reset(to:)`` (the store's state, replacing the window).
package final class SharedFeedCopy: FeedCopyKeeper {
    /// The most attempts of one write that lose a race to another instance before it is refused. A
    /// loser reads again while the winner may already send its next write, so under a storm on one
    /// feed an instance can lose several races in a row: with three instances about 2 in 3 each, which
    /// 16 attempts would make 1 in 700 writes refused, and 64 about 1 in 10^11.
    package static let maxAttempts = 64
    package var maxAttempts: Int { Self.maxAttempts }

    /// The store several instances share: the authority of this feed.
    package let store: any SharedFeedStore
    /// Called when the store lost its data (a commit found another epoch): the copies' owner
    /// (``SharedFeeds``) adopts the new epoch and empties every copy.
    let lostData: (@Sendable () async -> Void)?
    /// Why the shared store cannot be reached, while it cannot (subscribers were told).
    package var outage: String?
    /// A refresh from the store is queued (one at a time is enough).
    var refreshQueued = false
    /// A refresh reads the store again after restarting the feed's history (once).
    var rereading = false
    /// Bumped whenever the copy changes outside a refresh (a commit taken, the feed ended): a refresh
    /// whose read raced with such a change reads again rather than apply what it read.
    var generation = 0
    /// The store was found to hold versions this copy served with other content (``rewrites(_:in:)``):
    /// no commit is applied on top of them until a refresh has replaced the copy with the store's new history.
    package var rewritten = false
    /// Told when a client's id shows that the store went back in time (``catchUp(to:of:)``): the feed,
    /// the client's id, and the version the store holds.
    let rewound: (@Sendable (String, EventID, Int) -> Void)?
    /// When (``MonotonicClock``) a client's id last had this feed reported as gone back.
    var lastRewindReport: Double?
    /// At most one report per feed in this many seconds: an id is not signed, so a reader could
    /// otherwise fill the log by sending made-up ones.
    static let rewindReportInterval = 60.0

    package init(store: any SharedFeedStore, lostData: (@Sendable () async -> Void)?, rewound: (@Sendable (String, EventID, Int) -> Void)? = nil) {
        self.store = store
        self.lostData = lostData
        self.rewound = rewound
    }

    package var isBusy: Bool { refreshQueued || rereading }

    package func tookCommit() {
        generation &+= 1
    }

    package func ended() {
        generation &+= 1
        rewritten = false
    }

    package func committedAnswer(writeID: String, of feed: isolated Feed) async throws(StoreError) -> (version: Int, answer: [UInt8])? {
        try await store.committedAnswer(feed.name, writeID: writeID)
    }

    package func recoverLostData(_ feed: isolated Feed) async {
        await lostData?()
    }

    /// Nothing to commit, but this copy may be behind the store (another instance's commit or delete
    /// not yet heard): answered only once the store is where it is.
    package func confirmUnchanged(_ unchanged: FeedWriteResult, at position: FeedPosition, writeID: String?, request: String?,
                                  of feed: isolated Feed) async throws(FeedWriteError) -> FeedWriteResult? {
        let stored: StorePositions
        do { stored = try await store.positions([feed.name]) } catch { throw .store(error) }
        guard stored.intact else {
            await lostData?()
            return nil
        }
        guard stored.feeds[feed.name] == position else {
            if let error = await refresh(feed) { throw .store(error) }
            return nil
        }
        // A client's key is answered the same on a retry, even if the feed changes meanwhile.
        if let key = writeID {
            let earlier: (version: Int, answer: [UInt8])?
            do { earlier = try await store.recordAnswer(feed.name, writeID: key, version: position.version, answer: unchanged.answer(request: request)) } catch { throw .store(error) }
            if let earlier { return try FeedWriteResult(replaying: earlier.answer, version: earlier.version, request: request) }
        }
        return unchanged
    }

    /// A commit of this feed by any instance, from the shared store's events. One that follows is
    /// taken at once (no suspension, so events are taken in the order they come); a gap or another
    /// history queues a refresh from the store. Never skipped.
    package func take(history: String, version: Int, batch: [UInt8], snapshot encoded: [UInt8]?, state: [UInt8]?, into feed: isolated Feed) {
        guard let encoded else {  // the view-model state alone changed
            if let state { feed.applyNext(history: history, version: version, snapshot: nil, encodedBytes: 0, event: [], state: state) }
            return
        }
        if feed.version > 0, history == feed.history, version <= feed.version {
            // A version this copy holds, with other content: the store's history was rewritten past it.
            if rewrites([StoredBatch(version: version, bytes: batch)], in: feed) {
                rewritten = true
                readAgain(feed)
            }
            return
        }
        guard let decoded = try? WireCodec.decodeSnapshot(encoded),
              feed.applyNext(history: history, version: version, snapshot: decoded, encodedBytes: encoded.count, event: batch, state: state) else {
            readAgain(feed)
            return
        }
    }

    /// Whether `batches` (of the copy's history) hold a version the copy's window holds too, with
    /// other content: the store went back past versions this instance served (an older backup, a lagging
    /// replica promoted) and another instance numbered them again. Nothing can tell for a version
    /// outside the window (`--replay 0`).
    func rewrites(_ batches: [StoredBatch], in feed: isolated Feed) -> Bool {
        let replay = feed.window.batches
        guard let first = replay.first?.version else { return false }
        return batches.contains { batch in
            let index = batch.version - first
            guard !batch.bytes.isEmpty, index >= 0, index < replay.count, replay[index].version == batch.version else { return false }
            return replay[index].payload.bytes != batch.bytes
        }
    }

    /// Reads the feed from the shared store and brings the copy and its subscribers to it
    /// (``Feed/reset(to:)``): the batches they missed when the store's window still holds them, else a
    /// snapshot of the store's state (another history: a feed deleted and created again, or data lost),
    /// or `event: deleted` when the feed is gone. A store that cannot be reached leaves the copy as it is
    /// (the registry's position check tries again). The caller holds the write turn.
    /// - Returns: the read's error when the store could not be read (nothing changed), else nil.
    @discardableResult
    package func refresh(_ feed: isolated Feed) async -> StoreError? {
        let (readFrom, readAt, readGeneration) = (feed.history, feed.version, generation)
        let stored: StoredFeed?
        do { stored = try await store.read(feed.name) } catch { return error }
        // Commits or a delete reached the copy during the read: what was read may be older than they
        // are. Further along the copy's history, it is applied below; at or behind the copy's version,
        // the copy has it already; no feed or another history (a create read as "no feed", a
        // recreated history read as the old one) is read again.
        if generation != readGeneration {
            guard let stored, stored.history == feed.history else {
                readAgain(feed)
                return nil
            }
            if stored.version <= feed.version { return nil }
        }
        guard let stored else {
            if feed.version > 0 { feed.endEverySubscription() }
            return nil
        }
        if stored.history == feed.history, stored.version == feed.version, !rewrites(stored.batches, in: feed) {
            feed.applyNext(history: stored.history, version: stored.version, snapshot: nil, encodedBytes: 0, event: [], state: stored.viewState)
            return nil
        }
        // Commits that arrived during the read moved the copy past what was read: never go back.
        if stored.history == feed.history, stored.version < feed.version, readFrom == feed.history, stored.version >= readAt { return nil }
        // The store holds an older version than this instance served (an old backup, a lagging replica),
        // or versions it served numbered again with other content (another instance wrote on from
        // there): the feed gets a new history there, so no version is numbered twice; every copy resyncs.
        if stored.history == feed.history, readFrom == feed.history, stored.version < readAt || rewrites(stored.batches, in: feed) {
            rewritten = true
            _ = try? await store.restartHistory(feed.name, from: stored.history, at: stored.version, to: RandomID.history())
            if !rereading {
                rereading = true
                await refresh(feed)
                rereading = false
            }
            return nil
        }
        if feed.reset(to: stored) { rewritten = false }
        return nil
    }

    /// A client that saw a later version on another instance than this copy holds: the copy is read
    /// again first, so the client resumes with batches.
    ///
    /// A store that, read now, still holds the client's history at an older version than the client
    /// was served may have gone back in time: Redis put back from an older RDB or AOF with no instance
    /// left that held the copy (those that did notice by themselves, in ``refresh(_:)``). The client
    /// gets a snapshot, as any id the feed cannot continue does, and ``rewound`` is told (the log names
    /// `diffstream restore --redis`, which gives every feed a new history). A read never changes the
    /// feed: ids are not signed, so a made-up one must not be able to restart a history.
    package func catchUp(to id: EventID, of feed: isolated Feed) async -> Bool {
        await feed.acquireWrite()
        defer { feed.releaseWrite() }
        if await refresh(feed) != nil { return true }
        guard id.history == feed.history, id.version > feed.version, feed.version > 0 else { return false }
        let now = MonotonicClock.now()
        if let last = lastRewindReport, now - last < Self.rewindReportInterval { return false }
        lastRewindReport = now
        rewound?(feed.name, id, feed.version)
        return false
    }

    package func readAgain(_ feed: isolated Feed) {
        guard !refreshQueued else { return }
        refreshQueued = true
        Task { await feed.refreshNow() }
    }

    package func refreshInTurn(_ feed: isolated Feed) async -> StoreError? {
        await feed.acquireWrite()
        defer { feed.releaseWrite() }
        refreshQueued = false
        return await refresh(feed)
    }

    /// Subscribers are told once per outage (`event: unavailable` / `event: available`).
    package func setOutage(_ detail: String?, of feed: isolated Feed) {
        let changes = (detail == nil) != (outage == nil)
        outage = detail
        guard changes else { return }
        feed.sendEverySubscriber(detail.map { FeedEvents.unavailableEvent(feed: feed.name, detail: $0) } ?? FeedEvents.availableEvent(feed: feed.name))
        if detail == nil { readAgain(feed) }
    }
}
