import DiffStreamJSON
import FeedStorage
import HTTPCore

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
    /// Called before `stream` subscribes from `lastEventID`: brings the copy up to the client's
    /// position when the client saw a later version elsewhere. Returns false when it has already
    /// registered `stream` itself (the copy could not catch up; the stream was told why), true when
    /// the subscription goes on as usual.
    func prepare(subscribing stream: any EventSink, lastEventID: String?, tagged: Bool, to feed: isolated Feed) async -> Bool
    /// A refresh from the authority is under way or queued: the copy is not idle.
    var isBusy: Bool { get }
    /// Why the authority cannot be reached, while it cannot (new subscribers are told).
    var outage: String? { get }
    /// The feed ended every subscription and emptied its copy (deleted here or elsewhere).
    func ended()
}
