import CoreMetrics
import DiffStream
import DiffStreamJSON
import FeedStorage
import Metrics
import ServerSentEvents
import Timekeeping

// This file is long because only it may set a feed's state (`private(set)`, issue 53): the one write
// path and the two entries of commits made elsewhere live here, so that the compiler keeps it so.

/// A named, versioned stream of snapshots: the current snapshot, its version, a window of recent
/// batches for resuming clients, and the subscribers.
///
/// The actor owns all of that. A change is diffed once and encoded once; the same ``EventPayload`` is
/// queued to every subscriber by one broadcast. Because subscribing and publishing both run on the
/// actor, a new subscriber's first event and the batches after it are never out of order.
public actor Feed {
    public nonisolated let name: String
    /// The last snapshot document written to this feed with `PUT`, item by item: the next `PUT` reads
    /// again only the items whose bytes changed (``WireSnapshotMemo``). Forgotten when the feed is deleted.
    public nonisolated let documentMemo = WireSnapshotMemo()
    /// Random per incarnation of the feed: event ids from any other history are recognised as foreign.
    ///
    /// The feed's state (this, ``snapshot``, ``version``, ``viewState``, the window) is set here only:
    /// by ``write(_:viewState:options:)``, the one way a write changes a feed, and by the two entries of
    /// commits made elsewhere, ``applyNext(history:version:snapshot:encodedBytes:event:state:window:)`` and
    /// ``reset(to:)``.
    public private(set) var history: String
    public private(set) var snapshot: WireSnapshot
    /// 0 while the feed does not exist (not yet created, or deleted).
    public private(set) var version: Int
    /// The replay window (``ReplayWindow``: the last `replayLimit` batches, trimmed every `replayLimit / 4`).
    package private(set) var window: ReplayWindow
    package var replayLimit: Int { window.limit }
    /// Encoded bytes of the current snapshot.
    package private(set) var snapshotBytes = 0
    /// What this feed is charged in the shared ``StorageAccount`` (0 while it does not exist).
    package var storedBytes: Int { snapshotBytes + window.bytes }
    package let account: StorageAccount?
    /// Whether `account` counts this feed's bytes where its log keeps them (a family member kept on disk:
    /// ``StorageAccount/count(kept:)``): the feed is then charged only for a write's growth, until the
    /// log has committed it.
    package let bytesKeptByLog: Bool
    private var subscribers: [Int: any EventSink] = [:]
    /// The members each ``SubscriberGroup`` among `subscribers` was last counted with, by its id, and
    /// how many more subscribers than groups they make together (what ``subscriberCount`` adds).
    private var groupMembers: [Int: Int] = [:]
    private var extraMembers = 0
    let transport: (any EventBroadcaster)?
    package let metrics: FeedMetrics
    /// The one seam every write goes through (``FeedLog``): memory, the local log or a shared store.
    package let log: any FeedLog
    /// Whether the log keeps the bytes (a store): `--data none` without limits encodes nothing.
    let durable: Bool
    /// The view-model state last stored with this feed (restored at start), or nil.
    public private(set) var viewState: [UInt8]?
    /// One write at a time: the holder diffs against the durable state, commits, then publishes.
    private var writeTurn = FIFOTurn()
    /// The most writes that wait for one feed's turn (each holds its request's body): one more is
    /// refused with ``FeedWriteError/busy(limit:)`` (`429` with `Retry-After: 1`), so writers that
    /// outrun a feed get an answer instead of growing the server's memory. Refreshes of a shared
    /// store's copy and a view model's source elements are not refused.
    public static let maxQueuedWrites = 256
    /// How many writes wait for the turn now.
    package var queuedWrites: Int { writeTurn.waitingCount }
    /// The current snapshot as an event, encoded once per version (of one history: a recreated feed
    /// starts again at 1) and shared by every subscriber that needs it: new ones, and lagging ones
    /// being caught up.
    private var snapshotPayload: (history: String, version: Int, payload: EventPayload)?
    /// Whether the server hosts this feed (a view model): it does not count against `--max-feeds`.
    package private(set) var isHosted = false
    /// When this feed is a copy of another authority (a store several instances share), what keeps
    /// it in step (module `FeedReplication`); nil when this feed is the authority.
    package let keeper: (any FeedCopyKeeper)?
    /// Whether this feed keeps a hosted view model's state with its snapshot: when its log is durable
    /// (a store, a family member's own store) or shared (a copy). A feed only in memory does not: its
    /// host holds the state, so the state is not encoded for it on every change (issue 39).
    public nonisolated let keepsViewState: Bool

    /// A feed that does not exist yet; the first ``publish(_:viewState:)`` creates it.
    /// - Parameter keeper: for a copy of a shared store's feed, what keeps it in step (nil: this
    ///   feed is the authority, committing through `store`'s log).
    /// - Parameter log: the log to commit through instead of `store`'s (a family member's store).
    package init(name: String, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, account: StorageAccount? = nil,
         keeper: sending (any FeedCopyKeeper)? = nil, log: (any FeedLog)? = nil) {
        self.name = name
        self.keeper = keeper
        self.account = account
        self.bytesKeptByLog = log.map { account?.counts($0) ?? false } ?? false
        self.history = RandomID.history()
        self.snapshot = WireSnapshot()
        self.version = 0
        self.window = .feed(limit: replayLimit)
        self.transport = transport
        self.metrics = metrics
        self.log = log ?? feedLog(for: store)
        self.durable = store != nil || log != nil
        self.keepsViewState = durable || keeper != nil
    }

    /// A feed as it was stored: same history, version, snapshot and replay window.
    /// It is charged to `account` as it is, even past a limit (writes are then refused until there is room).
    package init(restoring stored: StoredFeed, snapshot: WireSnapshot, replayLimit: Int, transport: (any EventBroadcaster)?, metrics: FeedMetrics, store: (any FeedStore)?, account: StorageAccount? = nil,
         keeper: sending (any FeedCopyKeeper)? = nil, log: (any FeedLog)? = nil) {
        self.name = stored.name
        self.keeper = keeper
        self.account = account
        let bytesKeptByLog = log.map { account?.counts($0) ?? false } ?? false
        self.bytesKeptByLog = bytesKeptByLog
        self.history = stored.history
        self.snapshot = snapshot
        self.version = stored.version
        var window = ReplayWindow.feed(limit: replayLimit)
        // Batches stored before events carried `history` get it, so a resuming client sees the same data.
        window.replace(with: stored.batches.suffix(window.limit).map {
            (version: $0.version, payload: EventPayload(FeedEvents.addingHistory($0.bytes, feed: stored.name, history: stored.history)))
        })
        self.window = window
        self.snapshotBytes = stored.snapshot.count
        if keeper == nil && !bytesKeptByLog { account?.restoreFeed(bytes: snapshotBytes + window.bytes) }
        self.viewState = stored.viewState
        self.transport = transport
        self.metrics = metrics
        self.log = log ?? feedLog(for: store)
        self.durable = store != nil || log != nil
        self.keepsViewState = durable || keeper != nil
    }

    /// True once created and until deleted.
    public var exists: Bool { version > 0 }

    /// The number of open subscriptions: a ``SubscriberGroup`` counts as its members.
    public var subscriberCount: Int { subscribers.count + extraMembers }

    /// Nothing on this instance needs the copy now: no subscriber, not hosted, and not ``isBusy``.
    /// With a shared store, the registry drops idle copies (``FeedRegistry``).
    package var isIdle: Bool { subscriberCount == 0 && !isHosted && !isBusy }

    /// A write, a refresh from the shared store or a reread is under way or queued. A copy the registry
    /// has just loaded is busy until the refresh that follows the load (``FeedRegistry``) is done.
    package var isBusy: Bool { writeTurn.isTaken || keeper?.isBusy == true }

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
        if version > 0 && !bytesKeptByLog { account?.exemptFeed() }
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
    /// The one way a write changes a feed, whichever its log: the diff, the limits and the window are
    /// worked out here, the write goes through the commit seam (``FeedLog``), and the outcome is applied
    /// here (``applyNext(history:version:snapshot:encodedBytes:event:state:window:)``), which broadcasts.
    /// A feed that is its own authority commits once: anything but `committed` is its log's error. A
    /// copy of a shared store's feed (it has a ``FeedCopyKeeper``) commits with the copy's version as
    /// its base; a lost race (another instance wrote first) brings the copy up to date, sends
    /// subscribers what they missed, and computes again: a loop around the one commit (at most
    /// ``FeedCopyKeeper/maxAttempts``). A write id already committed gets its first answer back
    /// (``FeedWriteResult/replayed``) and writes nothing.
    public func write(_ new: WireSnapshot, viewState: [UInt8]?, options: FeedWriteOptions) async throws(FeedWriteError) -> FeedWriteResult {
        guard writeTurn.waitingCount < Self.maxQueuedWrites else { throw .busy(limit: Self.maxQueuedWrites) }
        if !writeTurn.tryTake() { await waitForWriteTurn() }  // inline: no call to suspend through when the turn is free
        defer { releaseWrite() }
        // The snapshot's encoding for a store; only its size for an account in memory (counted, not
        // written); `--data none` without limits pays for neither.
        let encoded = durable ? WireCodec.encode(new) : []
        let encodedCount = durable ? encoded.count : account != nil ? WireCodec.encodedCount(new) : 0
        if let account {
            do { try account.checkSnapshot(bytes: encodedCount) } catch { throw .limit(error) }
        }
        // A copy keeps a client's key for retries (so only its request is digested), and its first
        // answer is given before anything is computed (the content may equal the current one by now,
        // which alone would answer "nothing changed"). A feed that is its own authority keeps no keys.
        var request: String?
        if let keeper, let key = options.writeID {
            request = options.request ?? RequestDigest.of("PUT", encoded)
            let previous: (version: Int, answer: [UInt8])?
            do { previous = try await keeper.committedAnswer(writeID: key, of: self) } catch { throw .store(error) }
            if let previous { return try FeedWriteResult(replaying: previous.answer, version: previous.version, request: request) }
        }
        let writeID = keeper == nil ? "" : options.writeID ?? RandomID.perWrite()
        for _ in 0..<(keeper?.maxAttempts ?? 1) {
            if let keeper {
                // Versions this copy served were numbered again in the store (``FeedCopyKeeper/rewritten``):
                // nothing is diffed from them until the copy is the store's new history.
                if keeper.rewritten {
                    if let error = await keeper.refresh(self) { throw .store(error) }
                    if options.basis != nil { throw .conflict }
                    continue
                }
                if let basis = options.basis, basis.version != version { throw .conflict }
            }
            let (base, baseHistory) = (version, history)
            // What the log makes durable (nil: `--data none`, nothing to make durable), and the history
            // a put writes (nil: the view state alone).
            let write: FeedWrite?
            var puts: String?
            let result: FeedWriteResult
            var event: [UInt8] = []
            var held = Reservation.none
            var plan: ReplayWindow.Append?  // a feed that is its own authority: the window after the batch
            if base == 0 {
                let fresh = RandomID.history()
                puts = fresh
                write = durable ? .put(name: name, history: fresh, version: 1, snapshot: encoded, batch: nil, keepFrom: 2, viewState: viewState) : nil
                result = FeedWriteResult(created: true, version: 1, operations: new.numberOfSections + new.numberOfItems)
                if keeper == nil, let account {  // a shared store counts its feeds itself (`overLimit`)
                    do { try account.admitFeed(bytes: encodedCount, counted: !isHosted) } catch { throw .limit(error) }
                    held = .feed(bytes: encodedCount, counted: !isHosted)
                }
            } else {
                let started = MonotonicClock.now()
                let batch = WireSnapshot.diff(from: snapshot, to: new)
                metrics.recordDiff(seconds: MonotonicClock.now() - started)
                if batch.isEmpty {
                    // A view model's change to a copy (it has a basis) commits its state even when it
                    // equals the copy's: the store compares it with its own, which the position alone does not say.
                    guard let viewState, viewState != self.viewState || (keeper != nil && options.basis != nil) else {
                        let unchanged = FeedWriteResult(created: false, version: base, operations: 0)
                        guard let keeper else { return unchanged }
                        // This copy may be behind the store (another instance's commit or delete not yet heard).
                        if let answer = try await keeper.confirmUnchanged(unchanged, at: FeedPosition(history: baseHistory, version: base),
                                                                          writeID: options.writeID, request: request, of: self) { return answer }
                        if options.basis != nil { throw .conflict }
                        continue
                    }
                    write = durable ? .viewState(name: name, bytes: viewState) : nil
                    result = FeedWriteResult(created: false, version: base, operations: 0)
                } else {
                    let next = base + 1
                    event = FeedEvents.batchEvent(feed: name, id: EventID(history: baseHistory, version: next), batch: batch)
                    result = FeedWriteResult(created: false, version: next, operations: batch.operations.count)
                    puts = baseHistory
                    if keeper == nil {
                        // The window after this batch (the one rule, ``ReplayWindow``); the log keeps the same
                        // window: it trims only when this one does (every replayLimit / 4 batches), so most
                        // writes add a batch row and delete none (fewer pages per commit).
                        let append = window.appending(version: next, bytes: event.count)
                        plan = append
                        write = durable ? .put(name: name, history: baseHistory, version: next, snapshot: encoded,
                                               batch: window.limit > 0 ? StoredBatch(version: next, bytes: event) : nil, keepFrom: append.keepFrom, viewState: viewState) : nil
                        if let account {
                            let charged = storedBytes, charge = encodedCount + append.bytes
                            do { try account.charge(from: charged, to: charge) } catch { throw .limit(error) }
                            held = .charge(from: charged, to: charge)
                        }
                    } else {
                        // A shared store publishes every batch (even with no window) and caps its own window.
                        write = durable ? .put(name: name, history: baseHistory, version: next, snapshot: encoded,
                                               batch: StoredBatch(version: next, bytes: event), keepFrom: 0, viewState: viewState) : nil
                    }
                }
            }
            let outcome: FeedCommitOutcome
            if let write, keeper == nil {
                outcome = await log.commit(FeedCommit(write, base: base, writeID: writeID, counted: !isHosted))
            } else if let write {
                outcome = await log.commit(FeedCommit(write, base: base, baseHistory: baseHistory, writeID: writeID, clientKey: options.writeID != nil, fence: options.fence,
                                                      answer: result.answer(request: request), expectedState: options.basis.map { $0.state ?? [] }, counted: !isHosted))
            } else {
                outcome = .committed(version: result.version, answer: [], first: true)  // `--data none`: nothing to make durable
            }
            switch outcome {
            case .committed(let version, let answer, let first):
                guard first else {
                    let replayed = try FeedWriteResult(replaying: answer, version: version, request: request)
                    // This instance skips its own published commits: read what the first commit left
                    // (a view state keeps the version, so the version alone cannot say).
                    await keeper?.refresh(self)
                    return replayed
                }
                if bytesKeptByLog { held.release(account) }  // counted by the log now: the reservation ends
                let at = keeper == nil ? result.version : version  // a log that is not shared decides no version
                let applied = if let history = puts {
                    applyNext(history: history, version: at, snapshot: new, encodedBytes: encodedCount, event: event, state: viewState, window: plan)
                } else {
                    applyNext(history: baseHistory, version: at, snapshot: nil, encodedBytes: 0, event: [], state: viewState)
                }
                // Committed, but not on what this copy holds (another instance's commit came first, or
                // a rewrite was found meanwhile): the store's state reaches the subscribers.
                if !applied { keeper?.readAgain(self) }
                return result
            case .unavailable(let error):
                held.release(account)
                // A copy's outcome may be unknown (the store could not settle it): the commit may be in
                // the store, and this instance skips its own published commits, so read the feed again.
                keeper?.readAgain(self)
                throw .store(error)
            case .conflict:
                let keeper = try copyKeeper(answering: outcome, held)
                // A store that cannot be read now cannot say what to compute against: its error, not
                // a conflict after every attempt.
                if let error = await keeper.refresh(self) { throw .store(error) }
                if options.basis != nil { throw .conflict }
            case .notCommitted:
                _ = try copyKeeper(answering: outcome, held)
                continue
            case .lostData:
                let keeper = try copyKeeper(answering: outcome, held)
                await keeper.recoverLostData(self)
                if options.basis != nil { throw .conflict }
            case .fenced:
                _ = try copyKeeper(answering: outcome, held)
                throw .fenced
            case .overLimit(let feeds, _, let most):
                _ = try copyKeeper(answering: outcome, held)
                let exceeded = StorageLimitExceeded(limit: feeds ? .maxFeeds : .maxStoreBytes, value: most, needed: feeds ? most + 1 : encoded.count)
                throw .limit(account?.refuse(exceeded) ?? exceeded)
            }
        }
        throw .conflict
    }

    /// What a write of a feed that is its own authority holds in its ``StorageAccount`` until its log
    /// has answered: released when the log fails, or when the log counts the bytes itself.
    private enum Reservation {
        case none
        /// A new feed admitted with its snapshot's bytes.
        case feed(bytes: Int, counted: Bool)
        /// The feed's charge moved from one size to another.
        case charge(from: Int, to: Int)

        func release(_ account: StorageAccount?) {
            switch self {
            case .none: break
            case .feed(let bytes, let counted): account?.releaseFeed(bytes: bytes, counted: counted)
            case .charge(let from, let to): account?.refund(from: to, to: from)
            }
        }
    }

    /// The keeper of a copy, for an outcome only a shared store answers; to a feed that is its own
    /// authority, that outcome is its log's error (and what the write held is released).
    private func copyKeeper(answering outcome: FeedCommitOutcome, _ held: Reservation) throws(FeedWriteError) -> any FeedCopyKeeper {
        guard let keeper else {
            held.release(account)
            throw .store(.io(path: name, reason: "the log answered \(outcome) to a feed that is its own authority"))
        }
        return keeper
    }

    /// The first of the feed's two entries for commits: takes the commit of `version` of `history`
    /// (this instance's, answered by its log, or another instance's, from a shared store's events) and
    /// sends its batch (`event`, empty for none) to the subscribers, when it is the next version of this
    /// history or creates the feed. A version already here is ignored (a commit arrives twice: as this
    /// instance's answer and through the store's events). `snapshot` nil: the view-model state alone
    /// changed, at this very version. No suspension: commits are taken in the order they come.
    /// - Parameter plan: the window after the batch, as the write worked it out before its commit
    ///   (``ReplayWindow/appending(version:bytes:)``; nil: worked out here).
    /// - Returns: false when it does not follow (a gap, another history, a copy whose versions were
    ///   numbered again): the copy must be read again (``reset(to:)``).
    @discardableResult
    package func applyNext(history: String, version: Int, snapshot new: WireSnapshot?, encodedBytes: Int, event: [UInt8], state: [UInt8]?,
                           window plan: ReplayWindow.Append? = nil) -> Bool {
        guard let new else {
            guard history == self.history, version == self.version else { return false }
            viewState = state
            return true
        }
        guard keeper?.rewritten != true else { return false }
        if self.version > 0, history == self.history, version <= self.version { return true }
        let creates = self.version == 0 && version == 1
        guard creates || (history == self.history && version == self.version + 1) else { return false }
        keeper?.tookCommit()
        self.history = history
        self.version = version
        snapshot = new
        snapshotBytes = encodedBytes
        if let state { viewState = state }
        if creates {
            window.removeAll()
            metrics.setSubscribers(name, subscriberCount)
            return true
        }
        guard !event.isEmpty else { return true }
        let payload = EventPayload(event)
        if let plan { window.append(version, payload, as: plan) } else { window.append(version, payload) }
        broadcastBatch(event, payload)
        return true
    }

    /// The second entry: the feed becomes what its authority holds (`stored`: a shared store read
    /// again after a gap, a lost race or an outage), its window replaced by the stored one, and the
    /// subscribers are brought to it: the batches they missed when the stored window still holds them,
    /// else the snapshot. A feed that did not exist here tells no one (no one subscribed).
    /// - Returns: false when the stored snapshot does not decode (nothing changed).
    package func reset(to stored: StoredFeed) -> Bool {
        guard let decoded = try? WireCodec.decodeSnapshot(stored.snapshot) else { return false }
        let continues = version > 0 && stored.history == history && stored.version > version
            && (stored.batches.first.map { $0.version <= version + 1 } ?? false)
        let missed = continues ? stored.batches.filter { $0.version > version }.flatMap(\.bytes) : []
        let wasEmpty = version == 0
        history = stored.history
        version = stored.version
        snapshot = decoded
        snapshotBytes = stored.snapshot.count
        viewState = stored.viewState
        window.replace(with: stored.batches.suffix(window.limit).map { (version: $0.version, payload: EventPayload($0.bytes)) })
        if wasEmpty { return true }
        if continues { sendEverySubscriber(missed) } else { resyncEverySubscriber() }
        return true
    }

    /// The authority lost its data: every subscription ends with `event: deleted` and the feed is
    /// emptied, under a history of its own; what the authority holds next (nothing, or an old backup)
    /// comes with the next ``reset(to:)``.
    package func dropForLostData() {
        if version > 0 { endEverySubscription() }
        history = RandomID.history()
    }

    /// Sends a new batch (`event`, encoded once as `payload`) to every subscriber.
    package func broadcastBatch(_ event: [UInt8], _ payload: EventPayload) {
        metrics.recordBatch(name)
        let broadcastAt = MonotonicClock.now()
        transport?.broadcast(payload, to: Array(subscribers.values)) {
            MetricHandles.shared.timer(MetricName.publishToLastWrite).recordSeconds(MonotonicClock.now() - broadcastAt)
        }
    }

    /// Sends `events` (whole events of this feed: batches a copy missed, an outage notice) to every
    /// subscriber, encoded once.
    package func sendEverySubscriber(_ events: [UInt8]) {
        if !subscribers.isEmpty { transport?.broadcast(EventPayload(events), to: Array(subscribers.values)) }
    }

    /// Sends every subscriber the current snapshot (the copy jumped to another history or past its window).
    package func resyncEverySubscriber() {
        metrics.recordResync()
        if !subscribers.isEmpty { transport?.broadcast(currentSnapshotPayload(), to: Array(subscribers.values)) }
    }

    package func acquireWrite() async {
        if !writeTurn.tryTake() { await waitForWriteTurn() }
    }

    /// Waits behind the writer holding the turn (and those already waiting); returns holding it.
    private func waitForWriteTurn() async {
        await withCheckedContinuation { writeTurn.enqueue($0) }
    }

    /// Hands the write turn to the next waiting writer (first come, first served), or frees it.
    package func releaseWrite() {
        writeTurn.pass()
    }

    /// Adds a subscriber. It first gets either the batches it missed since `lastEventID` (when that id
    /// is ours and still in the replay window; none when it is the current one) or a fresh snapshot
    /// (``FeedOpening``), then `event: unavailable` during an outage of the shared store.
    /// (The stream's first block, `retry:` and the heartbeat announcement, is the API's.)
    public func subscribe(_ stream: any EventSink, lastEventID: String?) async {
        let opening = opening(since: lastEventID, unreadable: await catchUp(to: lastEventID))
        if case .deleted(let payload) = opening {
            stream.end(with: payload)
            return
        }
        if let payload = opening.payload { stream.send(payload) }
        subscribers[stream.id] = stream
        if let notice = outageNotice { stream.send(notice) }
        watch(stream)
    }

    /// Adds a member to `group`, a subscriber that forwards this feed's events to many (the slots of
    /// multi-feed streams; the feed knows nothing of them). `admit` runs on the actor, in order with the
    /// broadcasts, with what the member gets first (as ``subscribe(_:lastEventID:)`` would send it) and
    /// the outage notice to send after it; it returns whether the group took the member (false: the
    /// group has ended, and nothing changes here). The group is subscribed with its first member
    /// (unless `deleted` is what the member gets) and counted by its ``SubscriberGroup/memberCount``.
    package func join(_ group: any SubscriberGroup, lastEventID: String?, admit: @Sendable (FeedOpening, _ notice: EventPayload?) -> Bool) async {
        let opening = opening(since: lastEventID, unreadable: await catchUp(to: lastEventID))
        guard admit(opening, outageNotice) else { return }
        if case .deleted = opening { return }
        if subscribers[group.id] == nil {
            subscribers[group.id] = group
            watch(group)
        } else {
            recount(group)
        }
    }

    /// Counts `group`'s members again (one joined or left); nothing if it is not subscribed.
    package func recount(_ group: any SubscriberGroup) {
        guard subscribers[group.id] != nil else { return }
        let count = group.memberCount
        extraMembers += count - (groupMembers[group.id] ?? 1)
        groupMembers[group.id] = count
        metrics.setSubscribers(name, subscriberCount)
    }

    /// Runs `body` on the actor with the current snapshot event (one payload per version), in order
    /// with the broadcasts: a member of a group that fell behind is caught up with it. Nothing when the
    /// feed does not exist (every subscription has ended then).
    package func resyncMember(_ body: @Sendable (EventPayload) -> Void) {
        guard version > 0 else { return }
        metrics.recordResync()
        body(currentSnapshotPayload())
    }

    /// A client that saw a later version on another instance than this copy holds (the store's events
    /// are on their way): brings the copy up to date first, so it resumes with batches.
    /// - Returns: whether the shared store could not be read.
    func catchUp(to lastEventID: String?) async -> Bool {
        guard let keeper, let text = lastEventID, let id = EventID(text), id.history == history, id.version > version else { return false }
        return await keeper.catchUp(to: id, of: self)
    }

    /// What a subscriber whose last event id is `lastEventID` gets first; `unreadable`: ``catchUp(to:)``
    /// could not read the shared store. A copy still behind the client then sends nothing older than
    /// what it holds: the refresh after the outage brings it (and the batches it has, which it skips as
    /// duplicates); told `unavailable` only during a known outage, which ends with `available`, a
    /// one-off failure is read again at once.
    func opening(since lastEventID: String?, unreadable: Bool) -> FeedOpening {
        if unreadable, let text = lastEventID, let id = EventID(text), id.history == history, id.version > version, version > 0 {
            if keeper?.outage == nil { keeper?.readAgain(self) }
            return .behind
        }
        guard version > 0 else { return .deleted(EventPayload(FeedEvents.deletedEvent(feed: name))) }
        guard let missed = missedBatches(since: lastEventID) else { return .snapshot(currentSnapshotPayload()) }
        switch missed.count {
        case 0: return .missed(nil)
        case 1: return .missed(missed[0])
        default: return .missed(EventPayload(missed.flatMap(\.bytes)))
        }
    }

    /// `event: unavailable` while the shared store cannot be reached, else nil.
    var outageNotice: EventPayload? {
        keeper?.outage.map { EventPayload(FeedEvents.unavailableEvent(feed: name, detail: $0)) }
    }

    /// Counts a new subscriber and hands its end and its catch-up requests to the feed.
    func watch(_ stream: any EventSink) {
        if let group = stream as? any SubscriberGroup {
            recount(group)
        } else {
            metrics.setSubscribers(name, subscriberCount)
        }
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
        guard version - id.version <= replayLimit, let first = window.batches.first, first.version <= id.version + 1 else { return nil }
        return window.batches.filter { $0.version > id.version }.map(\.payload)
    }

    /// A subscriber fell behind and has drained its queue: catch it up with a fresh snapshot.
    func resync(_ stream: any EventSink) {
        guard subscribers[stream.id] != nil else { return }
        metrics.recordResync()
        stream.resume(with: currentSnapshotPayload())
    }

    /// The snapshot event of the current version, encoded on first use.
    package func currentSnapshotPayload() -> EventPayload {
        if let cached = snapshotPayload, cached.version == version, cached.history == history { return cached.payload }
        let event = FeedEvents.snapshotEvent(feed: name, id: EventID(history: history, version: version), snapshot: snapshot)
        let payload = EventPayload(event)
        snapshotPayload = (history, version, payload)
        return payload
    }

    func unsubscribe(_ id: Int) {
        // Not there: already ended by `delete()`, whose metrics entry must stay removed.
        guard subscribers.removeValue(forKey: id) != nil else { return }
        if let members = groupMembers.removeValue(forKey: id) { extraMembers -= members - 1 }
        metrics.setSubscribers(name, subscriberCount)
    }

    /// Deletes the feed once its log has (durably) forgotten it, then ends every subscription with
    /// `event: deleted`. The one way a delete changes a feed, as ``write(_:viewState:options:)`` is a
    /// write's: it goes through the commit seam (``FeedLog``) and the outcome is applied here. A feed
    /// that is its own authority deletes what it holds (false if nothing) and commits once: anything but
    /// `committed` is its log's error. For a copy of a shared store's feed the store decides, whatever
    /// the copy holds (another instance may have created the feed): a lost answer settled as not
    /// committed is a loop around the one commit (at most ``FeedCopyKeeper/maxAttempts``), and a client's
    /// key already used for a delete gets its first answer back, the copy read again.
    /// - Returns: whether the feed existed.
    /// - Throws: ``FeedWriteError/store(_:)``, or ``FeedWriteError/idempotencyKeyReused`` when a shared
    ///   store kept `writeID` for another request.
    package func delete(writeID: String? = nil) async throws(FeedWriteError) -> Bool {
        guard writeTurn.waitingCount < Self.maxQueuedWrites else { throw .busy(limit: Self.maxQueuedWrites) }
        if !writeTurn.tryTake() { await waitForWriteTurn() }  // inline: no call to suspend through when the turn is free
        defer { releaseWrite() }
        guard keeper != nil || version > 0 else { return false }
        // A copy's store keeps a client's key with its answer, for retries (see `write`).
        let request = keeper != nil && writeID != nil ? RequestDigest.of("DELETE") : nil
        let commit = if keeper == nil {
            FeedCommit(.delete(name: name), base: version, writeID: "", counted: !isHosted)
        } else {
            FeedCommit(.delete(name: name), base: 0, writeID: writeID ?? RandomID.perWrite(), clientKey: writeID != nil,
                       answer: FeedWriteResult(created: false, version: 0, operations: 0).answer(request: request), counted: !isHosted)
        }
        for _ in 0..<(keeper?.maxAttempts ?? 1) {
            let outcome: FeedCommitOutcome
            if keeper == nil && !durable {
                outcome = .committed(version: version, answer: [], first: true)  // `--data none`: nothing to make durable
            } else {
                outcome = await log.commit(commit)
            }
            switch outcome {
            case .committed(let existed, let answer, let first):
                guard first else {
                    _ = try FeedWriteResult(replaying: answer, version: existed, request: request)  // the key's first request was a delete too
                    await keeper?.refresh(self)  // a retry gets the first answer; the feed may exist again since
                    return existed == 1
                }
                if keeper == nil && !bytesKeptByLog { account?.releaseFeed(bytes: storedBytes, counted: !isHosted) }  // a shared store counts its own
                if version > 0 { endEverySubscription() }
                return keeper == nil || existed == 1  // a shared store says whether it held the feed
            case .unavailable(let error):
                throw .store(error)
            case .notCommitted:
                _ = try copyKeeper(answering: outcome, .none)
                continue
            case .lostData:
                let keeper = try copyKeeper(answering: outcome, .none)
                await keeper.recoverLostData(self)
            case .conflict, .fenced, .overLimit:
                _ = try copyKeeper(answering: outcome, .none)
                return false  // not answers a shared store gives a delete
            }
        }
        throw .store(.io(path: name, reason: "the delete could not be settled after \(keeper?.maxAttempts ?? 1) attempts"))
    }

    /// The feed is gone: every subscription ends with `event: deleted`, and the copy is emptied.
    package func endEverySubscription() {
        keeper?.ended()
        documentMemo.forget()
        version = 0
        snapshotPayload = nil
        snapshot = WireSnapshot()
        snapshotBytes = 0
        window.removeAll()
        viewState = nil
        let payload = EventPayload(FeedEvents.deletedEvent(feed: name))
        // Each ends with it, even one that fell behind (it would drop a broadcast event).
        for stream in Array(subscribers.values) { stream.end(with: payload) }
        subscribers.removeAll()
        groupMembers.removeAll()
        extraMembers = 0
        metrics.removeFeed(name)
    }

    /// The version and view-model state this feed holds: what a hosted view model computes its next
    /// change from (``FeedWriteOptions/basis``).
    package var basis: FeedBasis { FeedBasis(version: version, state: viewState) }
}
