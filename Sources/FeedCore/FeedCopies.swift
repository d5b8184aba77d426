import DiffStreamJSON
import FeedStorage

/// Where a ``FeedRegistry``'s feeds come from when the registry does not hold their authority:
/// copies of the feeds of a store several instances share, loaded on first use, kept up to date and
/// dropped when idle (module `FeedReplication`'s `SharedFeeds`; decision 0006). The registry hands
/// every lookup to it; the copies' own work (the store's events, position checks, outages, lost data)
/// is its business, not the registry's.
package protocol FeedCopies: Sendable {
    /// The one `Feed` of `name` (a copy, loaded from the store on first use), marked used.
    func feed(_ name: String) async throws(StoreError) -> Feed
    /// The feeds for a read or a new stream, each reflecting every write acknowledged before the
    /// call on whichever instance (``FeedRegistry/read(_:)-([String])``).
    func read(_ names: [String]) async -> [Result<Feed?, StoreError>]
    /// The copy to subscribe to for `feed` (``FeedRegistry/current(_:)``).
    func current(_ feed: Feed) async -> Feed
    /// Every instance's feeds, with their versions, sorted by name.
    func list() async throws(StoreError) -> [(name: String, version: Int)]
    /// Whether the store can be reached and holds this instance's data (nil: ready).
    func readiness() async -> String?
    /// Brings the storage account to what the store counted over every instance.
    func refreshUsage() async
    /// The memo of the copy held of `name` (``Feed/documentMemo``), nil when none is held; read
    /// without a hop, before a `PUT`'s document is decoded.
    func documentMemo(_ name: String) -> WireSnapshotMemo?
}
