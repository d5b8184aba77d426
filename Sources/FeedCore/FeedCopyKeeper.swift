import DiffStreamJSON
import FeedStorage
import ServerSentEvents

/// What keeps a ``Feed`` that is a copy of another authority in step with it: several instances
/// sharing a store, where the store decides every commit (decision 0006; the keeper is module
/// `FeedReplication`'s). The feed's one write path (``Feed/write(_:viewState:options:)``) asks it what
/// the feed cannot know alone: a client's first answer, whether the authority is where the copy is, and
/// to read the authority again after a lost race. Other instances' commits reach the feed through the
/// feed's two entries, ``Feed/applyNext(history:version:snapshot:encodedBytes:event:state:window:)`` and
/// ``Feed/reset(to:)``. Everything else (the diff, the limits, the window, the subscribers) stays the
/// feed's, and only the feed sets its state.
///
/// A keeper belongs to one feed and runs only on that feed's actor: every requirement that needs the
/// feed takes it `isolated`, so a keeper's state needs no lock of its own. What reaches the copy from
/// outside its writes comes in through the feed's entries below (the ``Feed`` extension), which hand
/// it to the keeper on that actor.
package protocol FeedCopyKeeper: AnyObject {
    /// The most attempts of one write that lose a race to another instance before it is refused.
    var maxAttempts: Int { get }
    /// The answer kept for a client's `Idempotency-Key` (`writeID`) when that write was committed (its
    /// version and answer), else nil: asked before anything is computed.
    func committedAnswer(writeID: String, of feed: isolated Feed) async throws(StoreError) -> (version: Int, answer: [UInt8])?
    /// Versions this copy served were numbered again in the authority: nothing is computed from them, and
    /// no commit applied on top of them, until the copy has been read again.
    var rewritten: Bool { get }
    /// Reads the authority and brings the copy to it (``Feed/reset(to:)``); the caller holds the write turn.
    /// - Returns: the read's error when the authority could not be read (the copy is as it was), else nil.
    @discardableResult
    func refresh(_ feed: isolated Feed) async -> StoreError?
    /// The authority lost its data (a commit found another epoch): every copy is emptied and read again.
    func recoverLostData(_ feed: isolated Feed) async
    /// A write that changes nothing in the copy, which is at `position`: its answer once the authority is
    /// there too (a client's key kept with it, or the answer kept for that key before), or nil when the
    /// copy was behind (then read again) or the authority lost its data: compute again.
    func confirmUnchanged(_ unchanged: FeedWriteResult, at position: FeedPosition, writeID: String?, request: String?,
                          of feed: isolated Feed) async throws(FeedWriteError) -> FeedWriteResult?
    /// A client comes back at `id`, a later version of this history than the copy holds (it saw it on
    /// another instance; the authority's events are on their way): brings the copy up to it if it can.
    /// - Returns: true when the authority could not be read (the copy is as it was).
    func catchUp(to id: EventID, of feed: isolated Feed) async -> Bool
    /// Reads the authority again soon, in turn with the writes (a one-off failure to read it, or a
    /// commit that did not follow what the copy holds), unless that is queued already.
    func readAgain(_ feed: isolated Feed)
    /// Takes the feed's write turn and reads the authority again (``refresh(_:)``); a queued read
    /// (``readAgain(_:)``) is then no longer queued.
    /// - Returns: the read's error when the authority could not be read (the copy is as it was), else nil.
    func refreshInTurn(_ feed: isolated Feed) async -> StoreError?
    /// A commit of this feed by any instance, from the authority's events (``Feed/remoteCommit(history:version:batch:snapshot:state:)``):
    /// taken at once when it follows, else read again. `snapshot` nil: the view-model state alone changed.
    func take(history: String, version: Int, batch: [UInt8], snapshot: [UInt8]?, state: [UInt8]?, into feed: isolated Feed)
    /// The authority cannot be reached (`detail`), or can again (nil): the subscribers are told once
    /// per outage; once it is back, the copy is read again.
    func setOutage(_ detail: String?, of feed: isolated Feed)
    /// A refresh from the authority is under way or queued: the copy is not idle.
    var isBusy: Bool { get }
    /// Why the authority cannot be reached, while it cannot (new subscribers are told).
    var outage: String? { get }
    /// The copy took a commit outside a refresh (this instance's write, or another's).
    func tookCommit()
    /// The feed ended every subscription and emptied its copy (deleted here or elsewhere).
    func ended()
}

/// A copy's entries from outside its writes: what its authority tells it (commits and deletes made by
/// other instances, reads again, outages), handed to its ``FeedCopyKeeper`` on the feed's actor. They
/// set no state of their own: the keeper goes through the feed's entries
/// (``Feed/applyNext(history:version:snapshot:encodedBytes:event:state:window:)``, ``Feed/reset(to:)``,
/// ``Feed/endEverySubscription()``). A feed that is its own authority has no keeper: nothing happens.
extension Feed {
    /// Where this feed is (nil while it does not exist), for a copy's position checks.
    package var position: FeedPosition? { version > 0 ? FeedPosition(history: history, version: version) : nil }

    /// A commit of this feed by any instance, from the authority's events (``FeedCopyKeeper/take(history:version:batch:snapshot:state:into:)``).
    package func remoteCommit(history: String, version: Int, batch: [UInt8], snapshot encoded: [UInt8]?, state: [UInt8]?) {
        keeper?.take(history: history, version: version, batch: batch, snapshot: encoded, state: state, into: self)
    }

    /// Another instance deleted the feed (of `history`): its subscriptions end as for a delete here.
    package func remoteDelete(history: String) {
        guard keeper != nil, version > 0, history == self.history else { return }
        endEverySubscription()
    }

    /// Reads the authority again in turn with the writes, unless that is queued already.
    package func queueRefresh() {
        keeper?.readAgain(self)
    }

    /// Reads the authority now, in turn with the writes (``FeedCopyKeeper/refreshInTurn(_:)``).
    /// - Returns: the read's error when the authority could not be read (the copy is as it was), else nil.
    @discardableResult
    package func refreshNow() async -> StoreError? {
        await keeper?.refreshInTurn(self)
    }

    /// The authority cannot be reached (`detail`), or can again (nil) (``FeedCopyKeeper/setOutage(_:of:)``).
    package func setOutage(_ detail: String?) {
        keeper?.setOutage(detail, of: self)
    }
}
