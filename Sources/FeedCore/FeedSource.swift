import DiffStreamJSON
import FeedStorage

/// Where a ``FeedRegistry``'s feeds come from, chosen once, when the registry is made: ``LocalFeeds``,
/// the feeds whose authority the registry holds (in memory, or made durable in a store this instance
/// owns), or copies of the feeds of a store several instances share, loaded on first use, kept up to
/// date and dropped when idle (module `FeedReplication`'s `SharedFeeds`; decision 0006). Every verb of
/// the registry hands its work to it, and none asks which one it is; the copies' own work (the store's
/// events, position checks, outages, lost data) is theirs, not the registry's.
package protocol FeedSource: Sendable {
    /// The one `Feed` of `name` (made on first use, or a copy loaded from the store), marked used.
    func feed(_ name: String) async throws(StoreError) -> Feed
    /// The feeds for a read or a new stream, each reflecting every write acknowledged before the
    /// call on whichever instance (``FeedRegistry/read(_:)-([String])``).
    func read(_ names: [String]) async -> [Result<Feed?, StoreError>]
    /// The feed to subscribe to for `feed` (``FeedRegistry/current(_:)``).
    func current(_ feed: Feed) async -> Feed
    /// Every feed (with a shared store, every instance's), with its version, sorted by name.
    func list() async throws(StoreError) -> [(name: String, version: Int)]
    /// Deletes `name` once its authority has (``FeedRegistry/delete(_:writeID:)``).
    func delete(_ name: String, writeID: String?) async throws(FeedWriteError) -> Bool
    /// The answer kept for a client's `Idempotency-Key` on `name` (nil: none, or no keys are kept).
    func committedAnswer(_ name: String, writeID: String) async throws(StoreError) -> (version: Int, answer: [UInt8])?
    /// Whether the feed `name` keeps a hosted view model's state (``FeedRegistry/keepsViewState(_:)``).
    func keepsViewState(_ name: String) -> Bool
    /// The memo of the feed held of `name` (``Feed/documentMemo``), nil when none is held; read
    /// without a hop, before a `PUT`'s document is decoded.
    func documentMemo(_ name: String) -> WireSnapshotMemo?
    /// Holds the feed `stored` as it was stored, its snapshot decoded (``FeedRegistry/restore(_:)``).
    func restore(_ stored: StoredFeed, snapshot: WireSnapshot) async
    /// The feed `name` committing through `log` (``FeedRegistry/adopt(_:restoring:log:replayLimit:)``).
    func adopt(_ name: String, restoring stored: StoredFeed?, log: any FeedLog, replayLimit: Int) async throws(StoreError) -> Feed
    /// Forgets the feed `name` held in memory without deleting it (``FeedRegistry/drop(_:)``).
    func drop(_ name: String) async
    /// Whether the feeds' authority can be reached (nil: ready).
    func readiness() async -> String?
    /// Brings the storage account to what the authority counted (with a shared store, over every instance).
    func refreshUsage() async
}
