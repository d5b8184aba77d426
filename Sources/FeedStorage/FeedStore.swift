/// The seam between feeds and durable storage.
///
/// A store keeps, per feed, opaque bytes only: the history id, the version, the encoded snapshot, the
/// replay window of encoded batch events, and the encoded view-model state. It never looks inside them,
/// so the wire format can change without touching a store. A store several instances share (Redis)
/// needs more: ``SharedFeedStore``.
///
/// Rules every implementation keeps:
/// - ``commit(_:)`` returns only once the write is durable (it survives `kill -9` and power loss as far
///   as the medium honours fsync); on an error nothing of the write is visible after a restart.
/// - Writes are applied in the order `commit` was called; a caller never has two writes of one feed in
///   flight at once (the feed serialises them), so writes of different feeds may be grouped.
public protocol FeedStore: Sendable {
    /// Reads everything back, once, before serving.
    func load() throws(StoreError) -> StoreContents
    /// Makes one write durable; concurrent calls may share one transaction (group commit).
    func commit(_ write: FeedWrite) async throws(StoreError)
    /// Counters for `/metrics`.
    func metrics() -> StoreMetrics
}

/// One batch of the replay window: its version and the encoded event.
public struct StoredBatch: Sendable, Equatable {
    public var version: Int
    public var bytes: [UInt8]
    public init(version: Int, bytes: [UInt8]) {
        self.version = version
        self.bytes = bytes
    }
}

/// One feed as stored.
public struct StoredFeed: Sendable, Equatable {
    public var name: String
    public var history: String
    public var version: Int
    public var snapshot: [UInt8]
    /// Oldest first, consecutive versions ending at `version` (possibly empty).
    public var batches: [StoredBatch]
    public var viewState: [UInt8]?
    public init(name: String, history: String, version: Int, snapshot: [UInt8], batches: [StoredBatch], viewState: [UInt8]?) {
        self.name = name
        self.history = history
        self.version = version
        self.snapshot = snapshot
        self.batches = batches
        self.viewState = viewState
    }
}

/// What ``FeedStore/load()`` found.
public struct StoreContents: Sendable {
    public var feeds: [StoredFeed]
    /// Damaged feeds that were set aside (only when the store was opened to do so), with the reason.
    public var setAside: [(name: String, reason: String)]
    /// What the server should log about the start (a torn write dropped, data migrated).
    public var notes: [String]
    public init(feeds: [StoredFeed], setAside: [(name: String, reason: String)] = [], notes: [String] = []) {
        self.feeds = feeds
        self.setAside = setAside
        self.notes = notes
    }
}

/// A change to one feed.
public enum FeedWrite: Sendable, Equatable {
    /// The feed now has `version` with `snapshot`. `batch` (the event that led there) joins the replay
    /// window, and batches older than `keepFrom` leave it. `viewState`, when given, replaces the stored one.
    case put(name: String, history: String, version: Int, snapshot: [UInt8], batch: StoredBatch?, keepFrom: Int, viewState: [UInt8]?)
    /// Only the view-model state changed (its rendering did not).
    case viewState(name: String, bytes: [UInt8])
    /// The feed and everything stored for it are gone.
    case delete(name: String)

    public var feed: String {
        switch self {
        case .put(let name, _, _, _, _, _, _), .viewState(let name, _), .delete(let name): name
        }
    }
}

/// Store counters for `/metrics`.
public struct StoreMetrics: Sendable, Equatable {
    /// The swift-metrics timer (a histogram on `/metrics`) each commit's duration is recorded in.
    public static let commitDurationLabel = "diffstream_store_commit_seconds"
    public var commits = 0
    public var writes = 0
    public var failedCommits = 0
    public var commitSeconds = 0.0
    public var maxWritesPerCommit = 0
    public var sizeBytes = 0
    /// Checkpoints written to compact the log, and attempts that failed (a full disk, say).
    public var compactions = 0
    public var failedCompactions = 0
    public init() {}
}
