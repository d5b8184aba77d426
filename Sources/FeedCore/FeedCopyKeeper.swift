import DiffStreamJSON
import FeedStorage
import ServerSentEvents

/// What keeps a ``Feed`` that is a copy of another authority in step with it: several instances
/// sharing a store, where the store decides every commit (decision 0006; the keeper is module
/// `FeedReplication`'s). The feed hands it what it cannot decide alone: its writes and deletes (a
/// version check against the store, a lost race computed again), and a subscription that comes from
/// further along than the copy. Everything else (the diff, the window, the subscribers) stays the
/// feed's.
///
/// A keeper belongs to one feed and runs only on that feed's actor: every requirement takes the feed
/// `isolated`, so a keeper's state needs no lock of its own.
package protocol FeedCopyKeeper: AnyObject {
    /// ``Feed/write(_:viewState:options:)`` against the authority; the caller holds the write turn.
    func write(_ new: WireSnapshot, viewState: [UInt8]?, options: FeedWriteOptions, to feed: isolated Feed) async throws(FeedWriteError) -> FeedWriteResult
    /// ``Feed/delete(writeID:)`` against the authority; the caller holds the write turn.
    func delete(writeID: String?, of feed: isolated Feed) async throws(FeedWriteError) -> Bool
    /// A client comes back at `id`, a later version of this history than the copy holds (it saw it on
    /// another instance; the authority's events are on their way): brings the copy up to it if it can.
    /// - Returns: true when the authority could not be read (the copy is as it was).
    func catchUp(to id: EventID, of feed: isolated Feed) async -> Bool
    /// Reads the authority again soon, in turn with the writes (a one-off failure to read it).
    func readAgain(_ feed: isolated Feed)
    /// A refresh from the authority is under way or queued: the copy is not idle.
    var isBusy: Bool { get }
    /// Why the authority cannot be reached, while it cannot (new subscribers are told).
    var outage: String? { get }
    /// The feed ended every subscription and emptied its copy (deleted here or elsewhere).
    func ended()
}
