/// A ``FeedStore`` that several instances share (Redis, issue 26): the store is the authority for every
/// feed, and an instance's feeds are a cache of it (docs/decisions/0003-redis.md).
///
/// Beyond ``FeedStore``'s three calls an instance needs to read one feed (to load it into its cache,
/// or after a gap), the batches after a version (to fill a gap or resume a client), a commit with a
/// version check (another instance may have written first: compute again), the position of the feeds
/// it follows (after a reconnect, on a timer), and the batches every instance commits (``events``).
///
/// Rules every implementation keeps, beyond ``FeedStore``'s:
/// - ``FeedLog/commit(_:)`` changes the feed only if it is still at `base`, and one
///   write id commits at most once: a second commit with it gets the first one's answer.
/// - ``events`` delivers the commits of every instance (this one's too) for the feeds followed, in
///   version order per feed, but may miss some (a lost connection): a ``SharedStoreEvent/following(_:)``
///   for a feed says "from now on nothing is missed": read its position then, and fill what is missing.
public protocol SharedFeedStore: VersionedFeedStore, FeedChangeFeed, FeedLeases, IdempotencyLedger {}

/// A shared store's versioned commits and reads (its job as the feeds' authority): commits with a
/// version check and write ids, reads of a feed and of the batches after a version, lost data.
public protocol VersionedFeedStore: FeedStore, FeedLog {
    /// Where the store is (a URL), for errors that name it.
    var location: String { get }
    /// What the store is called in log lines ("Redis").
    var kind: String { get }
    /// The feed as stored, or nil when there is none of that name.
    func read(_ name: String) async throws(StoreError) -> StoredFeed?
    /// The batches of `history` after `version`, oldest first (`[]` at `version`); nil when the feed is
    /// gone, has another history, is behind `version` (lost data), or the window no longer reaches back
    /// to `version + 1`: a snapshot is needed then.
    func batches(_ name: String, history: String, after version: Int) async throws(StoreError) -> [StoredBatch]?
    // Commits go through the one seam, ``FeedLog/commit(_:)`` (a ``FeedCommit`` in, a
    // ``FeedCommitOutcome`` out): the store changes the feed only if it is still at
    // ``FeedCommit/base`` (and, when given, ``FeedCommit/baseHistory`` and ``FeedCommit/expectedState``),
    // and one write id commits at most once.
    /// The feeds counted against the most feeds, and the bytes of every feed, over every instance.
    func usage() async throws(StoreError) -> (feeds: Int, bytes: Int)
    /// Gives the feed found at `version` of `history` a new history `fresh` at the next version (same
    /// content): the store holds an older version than this instance served, so the versions after it
    /// must not be numbered again in the old history. False when the feed was not there (moved meanwhile).
    func restartHistory(_ name: String, from history: String, at version: Int, to fresh: String) async throws(StoreError) -> Bool
    /// The names of every feed the store holds (of every instance), sorted.
    func names() async throws(StoreError) -> [String]
    /// After ``FeedCommitOutcome/lostData``: takes the store's new epoch (making one if there is
    /// none), so this instance writes again, as new histories.
    func adoptNewEpoch() async throws(StoreError)
}

/// A shared store's change feed: the commits of every instance, for the feeds followed, and where
/// each feed is.
public protocol FeedChangeFeed: Sendable {
    /// Where each feed is (a name without a feed is absent), and whether the store still holds this
    /// instance's data.
    func positions(_ names: [String]) async throws(StoreError) -> StorePositions
    /// Why the store, which answers, refuses writes now (a Redis whose memory is full), checked without
    /// writing anything; nil when it takes them or cannot say. `GET /readyz` reports it.
    func writeRefusal() async -> String?
    /// Follows a feed's commits (``events``); idempotent.
    func follow(_ name: String)
    /// Stops following a feed.
    func unfollow(_ name: String)
    /// Commits of the feeds followed, by any instance, and the state of the connection that brings them.
    var events: AsyncStream<SharedStoreEvent> { get }
}

/// Leases in a shared store: a hosted feed's source runs on one instance at a time.
public protocol FeedLeases: Sendable {
    /// Takes the lease `name` (a hosted feed's source runs on one instance at a time) for
    /// `milliseconds` if no one holds it. Returns its fencing token, or nil when another holds it.
    func acquireLease(_ name: String, milliseconds: Int) async throws(StoreError) -> String?
    /// Extends a lease `token` still holds. False: it was lost; stop at once.
    func renewLease(_ name: String, token: String, milliseconds: Int) async throws(StoreError) -> Bool
    /// Gives a lease up (at shutdown), if `token` still holds it.
    func releaseLease(_ name: String, token: String) async throws(StoreError)
}

/// Which keys of a family are live on some instance, by lease shard (docs/decisions/0008-family-shards.md):
/// each instance records its live members of a family, every shard in one round trip per renewal, and
/// the holder of a shard's lease reads who is live in it and keeps those members live itself, so that
/// their sources run there. A shared store without it runs each member's sources under a lease of its own.
public protocol FamilyInterest: Sendable {
    /// Records that each key of `keys` (by set: a family's shard) is live on this instance for
    /// `milliseconds` from now (the store's clock), and forgets the keys whose time ran out.
    func recordInterest(_ keys: [String: [String]], milliseconds: Int) async throws(StoreError)
    /// The keys of `set` recorded live on some instance whose time has not run out, sorted.
    func interest(in set: String) async throws(StoreError) -> [String]
}

/// The answers kept for clients' `Idempotency-Key`s in a shared store.
public protocol IdempotencyLedger: Sendable {
    /// The answer kept for `writeID` on `name` when that write was committed (its version and answer),
    /// else nil: a retry with a client's `Idempotency-Key` is answered from it before anything runs.
    func committedAnswer(_ name: String, writeID: String) async throws(StoreError) -> (version: Int, answer: [UInt8])?
    /// Keeps `answer` under a client's `writeID` (24 h) for a write that changed nothing, so a retry
    /// gets it even after the feed changed. A write id already kept stays as it is, and its answer is
    /// returned (the first attempt committed meanwhile, on another instance): that is the answer then.
    /// nil when `answer` is the one kept.
    func recordAnswer(_ name: String, writeID: String, version: Int, answer: [UInt8]) async throws(StoreError) -> (version: Int, answer: [UInt8])?
}

extension FeedChangeFeed {
    /// A store that cannot be full: nil.
    public func writeRefusal() async -> String? { nil }
}

extension VersionedFeedStore {
    public var location: String { "the shared store" }
    public var kind: String { "the shared store" }
}

extension VersionedFeedStore {
    /// A commit through ``FeedLog/commit(_:)``, answered as ``SharedCommitResult``.
    @available(*, deprecated, message: "commit a FeedCommit through FeedLog.commit(_:), which answers FeedCommitOutcome")
    public func commit(_ write: FeedWrite, base: Int, baseHistory: String?, writeID: String, clientKey: Bool, fence: String?, answer: [UInt8], expectedState: [UInt8]?, counted: Bool) async throws(StoreError) -> SharedCommitResult {
        try SharedCommitResult(await commit(FeedCommit(write, base: base, baseHistory: baseHistory, writeID: writeID, clientKey: clientKey, fence: fence, answer: answer,
                                                       expectedState: expectedState, counted: counted)))
    }

    /// A commit with no expected state, counted against the most feeds.
    @available(*, deprecated, message: "commit a FeedCommit through FeedLog.commit(_:), which answers FeedCommitOutcome")
    public func commit(_ write: FeedWrite, base: Int, writeID: String, fence: String?, answer: [UInt8]) async throws(StoreError) -> SharedCommitResult {
        try SharedCommitResult(await commit(FeedCommit(write, base: base, writeID: writeID, clientKey: true, fence: fence, answer: answer)))
    }
}

/// What became of a ``SharedFeedStore`` commit, as answered before ``FeedCommitOutcome``: the same
/// cases without `unavailable` (thrown instead), and `limit` for `overLimit`.
@available(*, deprecated, message: "use FeedCommitOutcome, the one answer of FeedLog.commit(_:)")
public enum SharedCommitResult: Sendable, Equatable {
    /// Committed at `version` (for a delete: 1 when the feed existed, 0 when not). `first` is false when
    /// the write id had committed before: `answer` is then the first commit's.
    case committed(version: Int, answer: [UInt8], first: Bool)
    /// The feed is not at the base (another instance wrote first): compute again against this.
    case conflict(version: Int, history: String)
    /// The store lost its data (a flushed Redis, an old backup): every feed starts a new history.
    case lostData
    /// The lease is held by another instance: stop the source.
    case fenced
    /// The answer was lost and the attempt given up before it ran: nothing was written; compute again.
    case notCommitted
    /// A limit counted over every instance's feeds would be passed: the most feeds (`feeds`) or the
    /// most bytes; nothing was written.
    case limit(feeds: Bool, used: Int, most: Int)

    /// `outcome` as it was answered before; `unavailable` is thrown.
    public init(_ outcome: FeedCommitOutcome) throws(StoreError) {
        switch outcome {
        case .committed(let version, let answer, let first): self = .committed(version: version, answer: answer, first: first)
        case .conflict(let version, let history): self = .conflict(version: version, history: history)
        case .lostData: self = .lostData
        case .fenced: self = .fenced
        case .notCommitted: self = .notCommitted
        case .overLimit(let feeds, let used, let most): self = .limit(feeds: feeds, used: used, most: most)
        case .unavailable(let error): throw error
        }
    }
}

/// A feed's place in its history.
public struct FeedPosition: Sendable, Equatable {
    public var history: String
    public var version: Int
    public init(history: String, version: Int) {
        self.history = history
        self.version = version
    }
}

/// What ``SharedFeedStore/positions(_:)`` found.
public struct StorePositions: Sendable, Equatable {
    /// False when the store lost this instance's data (its epoch is gone or another).
    public var intact: Bool
    /// The feeds asked for that exist.
    public var feeds: [String: FeedPosition]
    public init(intact: Bool, feeds: [String: FeedPosition]) {
        self.intact = intact
        self.feeds = feeds
    }
}

/// What a ``SharedFeedStore`` tells the instances following its feeds.
public enum SharedStoreEvent: Sendable, Equatable {
    /// The feed is followed from now on: nothing committed later is missed. Check its position.
    case following(String)
    /// A commit, by any instance: the feed is at `version` of `history`, `batch` (the SSE event, empty
    /// at version 1) led there, and `snapshot` (encoded) is where it led; a change of the view-model
    /// state alone has no batch and no snapshot (nil). `state`: the view-model state, when it changed.
    case committed(name: String, history: String, version: Int, batch: [UInt8], snapshot: [UInt8]?, state: [UInt8]?)
    /// The feed was deleted, by any instance.
    case deleted(name: String, history: String)
    /// The connection that brings events was lost (it is made again, then every feed is `following`).
    case interrupted(reason: String)
    /// The connection that brings events is made and follows every feed asked for: events flow (again).
    case connected
}
