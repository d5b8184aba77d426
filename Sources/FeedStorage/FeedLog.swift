/// The one seam a feed commits through (issue 36): a write travels as one value (``FeedCommit``) and
/// comes back as one value (``FeedCommitOutcome``). Three implementations: ``MemoryFeedLog``
/// (`--data none`: nothing to make durable), ``LogFeedStore`` (the local log) and a store several
/// instances share (``SharedFeedStore``), which alone answers anything but `committed` or `unavailable`.
/// Each store translates its own answers into ``FeedCommitOutcome`` once, at this seam; the feed
/// applies that outcome and nothing else.
///
/// Rules every implementation keeps:
/// - `committed` only once the write is durable where the log keeps it.
/// - A shared log changes the feed only if it is still at ``FeedCommit/base``, and one write id
///   commits at most once (a second commit with it gets the first one's answer, `first: false`).
/// - A log's error never escapes as a throw: it is ``FeedCommitOutcome/unavailable(_:)``.
public protocol FeedLog: Sendable {
    /// Commits `commit` and says what became of it. `consuming`: the write's bytes move into the log
    /// without a copy (a witness may still borrow it).
    func commit(_ commit: consuming FeedCommit) async -> FeedCommitOutcome
}

/// One write on its way to a ``FeedLog``, with everything a shared log checks it against.
public struct FeedCommit: Sendable, Equatable {
    /// What to make durable.
    public var write: FeedWrite
    /// For `.put`, the version the batch was computed against (the write's version is `base + 1`; 0
    /// creates); for `.viewState`, the version the state belongs to, of ``baseHistory`` (nil: the
    /// history is not checked); for `.delete` it is not checked.
    public var base: Int
    public var baseHistory: String?
    /// A client's `Idempotency-Key` (``clientKey``), or an id drawn for this write.
    public var writeID: String
    /// ``writeID`` is a client's key, whose answer is kept for retries (24 h); a drawn id's only as long
    /// as settling a lost answer needs.
    public var clientKey: Bool
    /// A lease's fencing token, for a hosted view model's source.
    public var fence: String?
    /// The answer kept with ``writeID``, so a retry gets the same.
    public var answer: [UInt8]
    /// The view-model state the stored one must be (a change computed from it), else `conflict`.
    public var expectedState: [UInt8]?
    /// A created feed counts against the most feeds (hosted view models do not).
    public var counted: Bool

    public init(_ write: FeedWrite, base: Int, baseHistory: String? = nil, writeID: String, clientKey: Bool = false, fence: String? = nil, answer: [UInt8] = [],
                expectedState: [UInt8]? = nil, counted: Bool = true) {
        self.write = write
        self.base = base
        self.baseHistory = baseHistory
        self.writeID = writeID
        self.clientKey = clientKey
        self.fence = fence
        self.answer = answer
        self.expectedState = expectedState
        self.counted = counted
    }

    /// The version a `.put` makes (its base's next), else ``base``.
    public var version: Int {
        if case .put(_, _, let version, _, _, _, _) = write { version } else { base }
    }
}

/// What became of a ``FeedCommit``.
public enum FeedCommitOutcome: Sendable, Equatable {
    /// Committed at `version` (for a delete: 1 when the feed existed, 0 when not). `first` is false when
    /// the write id had committed before: `answer` is then the first commit's.
    case committed(version: Int, answer: [UInt8], first: Bool)
    /// The feed is not at the base (another instance wrote first): compute again against this.
    case conflict(version: Int, history: String)
    /// A lease's token was refused (another instance holds the lease): stop the source.
    case fenced
    /// The log could not be reached or failed; the outcome may be unknown (the write may be in it).
    case unavailable(StoreError)
    /// The answer was lost and the attempt settled by reading back: nothing was written; compute again.
    case notCommitted
    /// The log lost its data (a flushed shared store, an old backup): every feed starts a new history.
    case lostData
    /// A limit counted over every instance's feeds would be passed: the most feeds (`feeds`) or the
    /// most bytes; nothing was written.
    case overLimit(feeds: Bool, used: Int, most: Int)

    /// The outcome of a shared store's commit.
    @available(*, deprecated, message: "a shared store answers FeedCommitOutcome itself")
    public init(_ result: SharedCommitResult) {
        switch result {
        case .committed(let version, let answer, let first): self = .committed(version: version, answer: answer, first: first)
        case .conflict(let version, let history): self = .conflict(version: version, history: history)
        case .lostData: self = .lostData
        case .fenced: self = .fenced
        case .notCommitted: self = .notCommitted
        case .limit(let feeds, let used, let most): self = .overLimit(feeds: feeds, used: used, most: most)
        }
    }
}

/// `--data none`: nothing is made durable; every commit is taken at once.
public struct MemoryFeedLog: FeedLog {
    public init() {}

    public func commit(_ commit: FeedCommit) async -> FeedCommitOutcome {
        .committed(version: commit.version, answer: commit.answer, first: true)
    }
}

extension FeedStore {
    /// ``FeedLog/commit(_:)`` for a store one instance owns: the write made durable as it is (no
    /// version check, no write ids: this instance is the authority), or the store's error.
    public func commitOwned(_ commit: FeedCommit) async -> FeedCommitOutcome {
        do { try await self.commit(commit.write) } catch { return .unavailable(error) }
        return .committed(version: commit.version, answer: commit.answer, first: true)
    }
}

/// Any ``FeedStore`` one instance owns as a ``FeedLog`` (a test's store, a program's own).
public struct OwnedStoreLog: FeedLog {
    public let store: any FeedStore
    public init(_ store: any FeedStore) { self.store = store }

    public func commit(_ commit: FeedCommit) async -> FeedCommitOutcome {
        await store.commitOwned(commit)
    }
}

extension LogFeedStore: FeedLog {
    /// ``FeedStore/commitOwned(_:)`` with the write moved straight into the store's commit: this is
    /// every durable write's path (`--data`).
    public func commit(_ commit: consuming FeedCommit) async -> FeedCommitOutcome {
        let version = commit.version, answer = commit.answer
        do { try await self.commit(commit.write) } catch { return .unavailable(error) }
        return .committed(version: version, answer: answer, first: true)
    }
}

/// The log a feed commits through: the store itself when it is one (the local log, a shared
/// store), any other store as it is, and nothing to make durable without one (`--data none`).
public func feedLog(for store: (any FeedStore)?) -> any FeedLog {
    guard let store else { return MemoryFeedLog() }
    if let log = store as? any FeedLog { return log }
    return OwnedStoreLog(store)
}
