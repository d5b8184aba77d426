import FeedStorage
import Synchronization

/// A store that keeps feeds' bytes outside the account's feeds and counts them itself: a family's
/// members kept on disk (``MemberStore``), whose bytes count against ``StorageLimits/maxStoreBytes``
/// whether the member is live or not (``StorageAccount/count(kept:)``).
public protocol KeptBytes: AnyObject, Sendable {
    /// The encoded bytes it keeps now (every snapshot, replay window and state).
    func bytes() -> Int
}

extension MemberStore: KeptBytes {}

/// Counts the feeds and the encoded bytes they hold, and refuses what would pass the ``StorageLimits``.
///
/// One account is shared by the registry and its feeds; every check-and-charge happens under one lock,
/// so concurrent writes to different feeds can never together pass a limit. A durable store can charge
/// the same account for what it writes.
///
/// A store that counts its bytes itself (``KeptBytes``, a family's members on disk) adds them to every
/// check and to the bytes published: ``count(kept:)``. A feed committing through such a store is not
/// charged for what it holds; its write reserves its growth here until the store has counted it.
public final class StorageAccount: Sendable {
    public let limits: StorageLimits
    private let state = Mutex(State())
    private let keptStores = Mutex<[any KeptBytes]>([])

    private struct State {
        var feeds = 0
        var bytes = 0
        var refusals: [StorageLimitExceeded.Limit: Int] = [:]
    }

    public init(limits: StorageLimits = StorageLimits()) {
        self.limits = limits
    }

    /// The feeds and bytes held now (the bytes of ``count(kept:)``'s stores included).
    public var usage: (feeds: Int, bytes: Int) {
        let kept = keptBytes()
        return state.withLock { ($0.feeds, $0.bytes + kept) }
    }

    /// Counts what `store` keeps against ``StorageLimits/maxStoreBytes`` from now on: its bytes are
    /// added to every check and to `diffstream_store_bytes`, and a feed committing through it is not
    /// charged for them a second time (``counts(_:)``). Once per store.
    public func count(kept store: any KeptBytes) {
        keptStores.withLock { stores in
            guard !stores.contains(where: { $0 === store }) else { return }
            stores.append(store)
        }
    }

    /// Whether `log` is a store whose bytes this account counts by ``count(kept:)``: a feed committing
    /// through it only reserves its growth while a write is under way.
    package func counts(_ log: any FeedLog) -> Bool {
        guard let kept = log as? any KeptBytes else { return false }
        return keptStores.withLock { $0.contains { $0 === kept } }
    }

    /// The bytes the ``count(kept:)`` stores keep now. Read before `state`'s lock is taken: the stores
    /// have locks of their own.
    private func keptBytes() -> Int {
        let stores = keptStores.withLock { $0 }
        return stores.reduce(0) { $0 + $1.bytes() }
    }

    /// Sets the counts to what a shared store counted over every instance (its `usage`).
    public func setUsage(feeds: Int, bytes: Int) {
        state.withLock {
            $0.feeds = feeds
            $0.bytes = bytes
        }
    }

    /// Checks a snapshot's size against ``StorageLimits/maxFeedBytes``; changes nothing.
    public func checkSnapshot(bytes: Int) throws(StorageLimitExceeded) {
        guard bytes > limits.maxFeedBytes else { return }
        throw refuse(StorageLimitExceeded(limit: .maxFeedBytes, value: limits.maxFeedBytes, needed: bytes))
    }

    /// Counts a new feed holding `bytes`, or throws and counts nothing.
    /// - Parameter counted: whether the feed counts against ``StorageLimits/maxFeeds``. A feed the
    ///   server hosts itself (a view model) does not: `--max-feeds` bounds the feeds clients create.
    ///   Its bytes count against ``StorageLimits/maxStoreBytes`` either way.
    public func admitFeed(bytes: Int, counted: Bool = true) throws(StorageLimitExceeded) {
        let kept = keptBytes()
        try state.withLock { (state) throws(StorageLimitExceeded) in
            guard !counted || state.feeds < limits.maxFeeds else {
                state.refusals[.maxFeeds, default: 0] += 1
                throw StorageLimitExceeded(limit: .maxFeeds, value: limits.maxFeeds, needed: state.feeds + 1)
            }
            guard kept + state.bytes + bytes <= limits.maxStoreBytes else {
                state.refusals[.maxStoreBytes, default: 0] += 1
                throw StorageLimitExceeded(limit: .maxStoreBytes, value: limits.maxStoreBytes, needed: kept + state.bytes + bytes)
            }
            if counted { state.feeds += 1 }
            state.bytes += bytes
        }
    }

    /// A counted feed (say, restored from the store) is now hosted by the server: it stops counting
    /// against ``StorageLimits/maxFeeds``.
    public func exemptFeed() {
        state.withLock { $0.feeds -= 1 }
    }

    /// Changes what one feed holds from `old` to `new` bytes, or throws and changes nothing. Shrinking
    /// always succeeds.
    public func charge(from old: Int, to new: Int) throws(StorageLimitExceeded) {
        let kept = new > old ? keptBytes() : 0
        try state.withLock { (state) throws(StorageLimitExceeded) in
            let total = state.bytes - old + new
            guard new <= old || kept + total <= limits.maxStoreBytes else {
                state.refusals[.maxStoreBytes, default: 0] += 1
                throw StorageLimitExceeded(limit: .maxStoreBytes, value: limits.maxStoreBytes, needed: kept + total)
            }
            state.bytes = total
        }
    }

    /// Counts a feed restored from the store as it is, even past a limit (writes that grow the store
    /// are refused until there is room again).
    public func restoreFeed(bytes: Int) {
        state.withLock {
            $0.feeds += 1
            $0.bytes += bytes
        }
    }

    /// Takes back a charge whose write did not happen (the store refused it): from `new` to `old`
    /// bytes, without checking the limit.
    public func refund(from new: Int, to old: Int) {
        state.withLock { $0.bytes += old - new }
    }

    /// Forgets a deleted feed that held `bytes` (`counted` as it was admitted).
    public func releaseFeed(bytes: Int, counted: Bool = true) {
        state.withLock {
            if counted { $0.feeds -= 1 }
            $0.bytes -= bytes
        }
    }

    /// Counts a refusal made elsewhere (a shared store counted the limit), and returns it.
    @discardableResult
    package func refuse(_ error: StorageLimitExceeded) -> StorageLimitExceeded {
        state.withLock { $0.refusals[error.limit, default: 0] += 1 }
        return error
    }

    /// The values `/metrics` publishes: usage, limits, refusals.
    package func samples() -> [MetricSample] {
        let kept = keptBytes()
        let copy = state.withLock { $0 }
        return [
            MetricSample(name: "diffstream_feeds", value: Double(copy.feeds), kind: .gauge),
            MetricSample(name: "diffstream_store_bytes", value: Double(kept + copy.bytes), kind: .gauge),
            MetricSample(name: "diffstream_max_feeds", value: Double(limits.maxFeeds), kind: .gauge),
            MetricSample(name: "diffstream_max_feed_bytes", value: Double(limits.maxFeedBytes), kind: .gauge),
            MetricSample(name: "diffstream_max_store_bytes", value: Double(limits.maxStoreBytes), kind: .gauge),
        ] + StorageLimitExceeded.Limit.allCases.map { limit in
            MetricSample(name: "diffstream_storage_refusals_total", labels: [("limit", limit.rawValue)], value: Double(copy.refusals[limit, default: 0]), kind: .counter)
        }
    }
}
