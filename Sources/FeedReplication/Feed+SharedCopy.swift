import FeedCore
import FeedStorage
import ServerSentEvents
import Timekeeping

/// A feed as a copy of a shared store's (several instances serve it; decision 0003, the shared store):
/// what reaches a copy from outside its writes (the store's events, refreshes, outages), handed to its
/// keeper (``SharedFeedCopy``) on the feed's actor. None of it sets the feed's state: the keeper goes
/// through the feed's entries (``Feed/applyNext(history:version:snapshot:encodedBytes:event:state:)``,
/// ``Feed/reset(to:)``, ``Feed/endEverySubscription()``).
extension Feed {
    /// This feed's keeper when it is a copy of a shared store's feed.
    var sharedCopy: SharedFeedCopy? { keeper as? SharedFeedCopy }

    /// A commit of this feed by any instance, from the shared store's events (``SharedFeedCopy``).
    package func remoteCommit(history: String, version: Int, batch: [UInt8], snapshot encoded: [UInt8]?, state: [UInt8]?) {
        sharedCopy?.take(history: history, version: version, batch: batch, snapshot: encoded, state: state, into: self)
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
        return await copy.refresh(self)
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
