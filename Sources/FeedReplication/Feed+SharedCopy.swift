import DiffStream
import DiffStreamJSON
import FeedCore
import FeedStorage
import HTTPCore

/// A feed as a copy of a shared store's (several instances serve it; decision 0003, the shared store):
/// writes committed with a version check and computed again after a lost race, commits of other
/// instances taken in order, refreshes after a gap, outages told to subscribers, and a history
/// restarted when the store went back past versions this copy served.
extension Feed {
    /// This feed's keeper when it is a copy of a shared store's feed.
    var sharedCopy: SharedFeedCopy? { keeper as? SharedFeedCopy }

    /// ``write(_:viewState:options:)`` against a shared store; the caller holds the write turn.
    func writeShared(_ copy: SharedFeedCopy, _ new: WireSnapshot, viewState: [UInt8]?, options: FeedWriteOptions) async throws(FeedWriteError) -> FeedWriteResult {
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
            do { previous = try await copy.store.committedAnswer(name, writeID: key) } catch { throw .store(error) }
            if let previous { return try FeedWriteResult(replaying: previous.answer, version: previous.version, request: request) }
        }
        let writeID = options.writeID ?? RandomID.perWrite()
        for _ in 0..<SharedFeedCopy.maxAttempts {
            // Versions this copy served were numbered again in the store (``rewrites(_:)``): nothing is
            // diffed from them until the copy is the store's new history.
            if copy.rewritten {
                if let error = await refreshFromStore(copy) { throw .store(error) }
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
                    // copy's: the store compares it with its own, which the position alone does not say.
                    guard let viewState, viewState != self.viewState || options.basis != nil else {
                        // Nothing to commit, but this copy may be behind the store (another instance's
                        // commit or delete not yet heard): answer only once the store is where it is.
                        let position: StorePositions
                        do { position = try await copy.store.positions([name]) } catch { throw .store(error) }
                        guard position.intact else {
                            await copy.lostData?()
                            if options.basis != nil { throw .conflict }
                            continue
                        }
                        guard position.feeds[name] == FeedPosition(history: baseHistory, version: base) else {
                            if let error = await refreshFromStore(copy) { throw .store(error) }
                            if options.basis != nil { throw .conflict }
                            continue
                        }
                        let unchanged = FeedWriteResult(created: false, version: base, operations: 0)
                        // A client's key is answered the same on a retry, even if the feed changes meanwhile.
                        if let key = options.writeID {
                            let earlier: (version: Int, answer: [UInt8])?
                            do { earlier = try await copy.store.recordAnswer(name, writeID: key, version: base, answer: unchanged.answer(request: request)) } catch { throw .store(error) }
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
            let outcome = await log.commit(FeedCommit(write, base: base, baseHistory: baseHistory, writeID: writeID, clientKey: options.writeID != nil, fence: options.fence,
                                                      answer: result.answer(request: request), expectedState: options.basis.map { $0.state ?? [] }, counted: !isHosted))
            switch outcome {
            case .unavailable(let error):
                // The outcome may be unknown (the store could not settle it): the commit may be in the
                // store, and this instance skips its own published commits, so read the feed again.
                queueRefresh()
                throw .store(error)
            case .committed(let version, let answer, let first):
                guard first else {
                    let replayed = try FeedWriteResult(replaying: answer, version: version, request: request)
                    // This instance skips its own published commits: read what the first commit left
                    // (a view state keeps the version, so the version alone cannot say).
                    await refreshFromStore(copy)
                    return replayed
                }
                if case .viewState = write {
                    // Another instance's commit came first (its message was taken before this answer):
                    // the store has this state with that commit; read it rather than guess.
                    if baseHistory == history, version == self.version { self.viewState = viewState } else { queueRefresh() }
                } else {
                    let history: String = if case .put(_, let history, _, _, _, _, _) = write { history } else { self.history }
                    if !applyCommit(history: history, version: version, snapshot: new, encodedBytes: encoded.count, event: event, state: viewState) {
                        queueRefresh()  // committed, but not on what this copy holds (a rewrite found meanwhile): the store's state reaches the subscribers
                    }
                }
                return result
            case .conflict:
                // A store that cannot be read now cannot say what to compute against: its error, not
                // a conflict after every attempt.
                if let error = await refreshFromStore(copy) { throw .store(error) }
                if options.basis != nil { throw .conflict }
            case .notCommitted:
                continue
            case .lostData:
                await copy.lostData?()
                if options.basis != nil { throw .conflict }
            case .fenced:
                throw .fenced
            case .overLimit(let feeds, _, let most):
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
    func applyCommit(history: String, version: Int, snapshot new: WireSnapshot, encodedBytes: Int, event: [UInt8], state: [UInt8]?) -> Bool {
        guard let copy = sharedCopy, !copy.rewritten else { return false }
        if self.version > 0, history == self.history, version <= self.version { return true }
        let creates = self.version == 0 && version == 1
        guard creates || (history == self.history && version == self.version + 1) else { return false }
        copy.generation &+= 1
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
        window.append(version, payload)
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
            // A version this copy holds, with other content: the store's history was rewritten past it.
            if rewrites([StoredBatch(version: version, bytes: batch)]) {
                sharedCopy?.rewritten = true
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
    /// other content: the store went back past versions this instance served (an older backup, a lagging
    /// replica promoted) and another instance numbered them again. Nothing can tell for a version
    /// outside the window (`--replay 0`).
    func rewrites(_ batches: [StoredBatch]) -> Bool {
        let replay = window.batches
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
        guard let copy = sharedCopy, !copy.refreshQueued else { return }
        copy.refreshQueued = true
        Task { await self.refreshInTurn() }
    }

    /// Refreshes from the shared store now, in turn with the writes.
    /// - Returns: the read's error when the store could not be read (the copy is as it was), else nil.
    @discardableResult
    package func refreshNow() async -> StoreError? {
        await refreshInTurn()
    }

    @discardableResult
    func refreshInTurn() async -> StoreError? {
        await acquireWrite()
        defer { releaseWrite() }
        guard let copy = sharedCopy else { return nil }
        copy.refreshQueued = false
        return await refreshFromStore(copy)
    }

    /// Reads the feed from the shared store and brings the copy and its subscribers to it: the
    /// batches they missed when the store's window still holds them, else a snapshot of the store's
    /// state (another history: a feed deleted and created again, or data lost), or `event: deleted`
    /// when the feed is gone. A store that cannot be reached leaves the copy as it is (the registry's
    /// position check tries again). The caller holds the write turn.
    /// - Returns: the read's error when the store could not be read (nothing changed), else nil.
    @discardableResult
    func refreshFromStore(_ copy: SharedFeedCopy) async -> StoreError? {
        let (readFrom, readAt, readGeneration) = (history, version, copy.generation)
        let stored: StoredFeed?
        do { stored = try await copy.store.read(name) } catch { return error }
        // Commits or a delete reached the copy during the read: what was read may be older than they
        // are. Further along the copy's history, it is applied below; at or behind the copy's version,
        // the copy has it already; no feed or another history (a create read as "no feed", a
        // recreated history read as the old one) is read again.
        if copy.generation != readGeneration {
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
        // The store holds an older version than this instance served (an old backup, a lagging replica),
        // or versions it served numbered again with other content (another instance wrote on from
        // there): the feed gets a new history there, so no version is numbered twice; every copy resyncs.
        if stored.history == history, readFrom == history, stored.version < readAt || rewrites(stored.batches) {
            copy.rewritten = true
            _ = try? await copy.store.restartHistory(name, from: stored.history, at: stored.version, to: RandomID.history())
            if !copy.rereading {
                copy.rereading = true
                await refreshFromStore(copy)
                copy.rereading = false
            }
            return nil
        }
        guard let decoded = try? WireCodec.decodeSnapshot(stored.snapshot) else { return nil }
        copy.rewritten = false
        let continues = version > 0 && stored.history == history && stored.version > version
            && (stored.batches.first.map { $0.version <= version + 1 } ?? false)
        let missed = continues ? stored.batches.filter { $0.version > version }.flatMap(\.bytes) : []
        let wasEmpty = version == 0
        history = stored.history
        version = stored.version
        snapshot = decoded
        snapshotBytes = stored.snapshot.count
        viewState = stored.viewState
        window.replace(with: stored.batches.suffix(replayLimit).map { (version: $0.version, payload: EventPayload($0.bytes)) })
        if wasEmpty { return nil }
        if continues { sendEverySubscriber(missed) } else { resyncEverySubscriber() }
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
        guard let copy = sharedCopy else { return }
        let changes = (detail == nil) != (copy.outage == nil)
        copy.outage = detail
        guard changes else { return }
        sendEverySubscriber(detail.map { FeedEvents.unavailableEvent(feed: name, detail: $0) } ?? FeedEvents.availableEvent(feed: name))
        if detail == nil { queueRefresh() }
    }
}
