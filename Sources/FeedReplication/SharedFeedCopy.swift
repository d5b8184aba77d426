import DiffStreamJSON
import FeedCore
import FeedStorage
import ServerSentEvents
import Timekeeping

/// What keeps one ``Feed`` a copy of a shared store's feed (decision 0006): the store decides every
/// commit, and this keeper holds what the copy needs for that besides the feed's own state. It runs
/// only on its feed's actor (``FeedCopyKeeper``); the work itself is `Feed`'s extension in this module
/// (`Feed+SharedCopy.swift`).
package final class SharedFeedCopy: FeedCopyKeeper {
    /// The most attempts of one write that lose a race to another instance before it is refused. A
    /// loser reads again while the winner may already send its next write, so under a storm on one
    /// feed an instance can lose several races in a row: with three instances about 2 in 3 each, which
    /// 16 attempts would make 1 in 700 writes refused, and 64 about 1 in 10^11.
    package static let maxAttempts = 64

    /// The store several instances share: the authority of this feed.
    package let store: any SharedFeedStore
    /// Called when the store lost its data (a commit found another epoch): the copies' owner
    /// (``SharedFeeds``) adopts the new epoch and empties every copy.
    let lostData: (@Sendable () async -> Void)?
    /// Why the shared store cannot be reached, while it cannot (subscribers were told).
    package var outage: String?
    /// A refresh from the store is queued (one at a time is enough).
    var refreshQueued = false
    /// A refresh reads the store again after restarting the feed's history (once).
    var rereading = false
    /// Bumped whenever the copy changes outside a refresh (a commit taken, the feed ended): a refresh
    /// whose read raced with such a change reads again rather than apply what it read.
    var generation = 0
    /// The store was found to hold versions this copy served with other content (`rewrites`): no
    /// commit is applied on top of them until a refresh has replaced the copy with the store's new history.
    var rewritten = false
    /// Told when a client's id shows that the store went back in time (``catchUp(to:of:)``): the feed,
    /// the client's id, and the version the store holds.
    let rewound: (@Sendable (String, EventID, Int) -> Void)?
    /// When (``MonotonicClock``) a client's id last made this feed start a new history.
    var lastRewindRestart: Double?
    /// At most one such restart per feed in this many seconds: an id is not signed, so a reader could
    /// otherwise make every subscriber resync again and again by sending made-up ones.
    static let rewindRestartInterval = 60.0

    package init(store: any SharedFeedStore, lostData: (@Sendable () async -> Void)?, rewound: (@Sendable (String, EventID, Int) -> Void)? = nil) {
        self.store = store
        self.lostData = lostData
        self.rewound = rewound
    }

    package var isBusy: Bool { refreshQueued || rereading }

    package func ended() {
        generation &+= 1
        rewritten = false
    }

    package func write(_ new: WireSnapshot, viewState: [UInt8]?, options: FeedWriteOptions, to feed: isolated Feed) async throws(FeedWriteError) -> FeedWriteResult {
        try await feed.writeShared(self, new, viewState: viewState, options: options)
    }

    /// Whatever the copy holds, the store decides (another instance may have created the feed).
    package func delete(writeID: String?, of feed: isolated Feed) async throws(FeedWriteError) -> Bool {
        let id = writeID ?? RandomID.perWrite()
        let request = writeID == nil ? nil : RequestDigest.of("DELETE")
        for _ in 0..<Self.maxAttempts {
            let outcome = await feed.log.commit(FeedCommit(.delete(name: feed.name), base: 0, writeID: id, clientKey: writeID != nil,
                                                           answer: FeedWriteResult(created: false, version: 0, operations: 0).answer(request: request), counted: !feed.isHosted))
            switch outcome {
            case .committed(let existed, let answer, let first):
                if first {
                    if feed.version > 0 { feed.endEverySubscription() }
                } else {
                    _ = try FeedWriteResult(replaying: answer, version: existed, request: request)  // the key's first request was a delete too
                    await feed.refreshFromStore(self)  // a retry: the first answer; the feed may exist again since
                }
                return existed == 1
            case .notCommitted:
                continue
            case .lostData:
                await lostData?()
            case .unavailable(let error):
                throw .store(error)
            case .conflict, .fenced, .overLimit:
                return false  // not answers a delete gets
            }
        }
        throw .store(.io(path: feed.name, reason: "the delete could not be settled after \(Self.maxAttempts) attempts"))
    }

    /// A client that saw a later version on another instance than this copy holds: the copy is read
    /// again first, so the client resumes with batches.
    ///
    /// A store that, read now, holds the client's history at an older version than the client was
    /// served went back in time: Redis put back from an older RDB or AOF with no instance left that
    /// held the copy (those that did notice by themselves, in ``Feed/refreshFromStore(_:)``). Left so,
    /// the feed would number new states with versions clients already hold, and a client resuming
    /// from one would get batches computed from a state it never had. The feed starts a new history
    /// there (at most once a minute per feed), so this client and every later one gets a snapshot.
    package func catchUp(to id: EventID, of feed: isolated Feed) async -> Bool {
        await feed.acquireWrite()
        defer { feed.releaseWrite() }
        if await feed.refreshFromStore(self) != nil { return true }
        guard id.history == feed.history, id.version > feed.version, feed.version > 0 else { return false }
        let now = MonotonicClock.now()
        rewound?(feed.name, id, feed.version)
        if let last = lastRewindRestart, now - last < Self.rewindRestartInterval { return false }
        lastRewindRestart = now
        if (try? await store.restartHistory(feed.name, from: id.history, at: feed.version, to: RandomID.history())) == true {
            await feed.refreshFromStore(self)
        }
        return false
    }

    package func readAgain(_ feed: isolated Feed) {
        feed.queueRefresh()
    }
}
