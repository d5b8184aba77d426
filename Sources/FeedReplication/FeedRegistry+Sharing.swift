import FeedCore
import FeedStorage
import Logging
import ServerSentEvents
import Timekeeping

extension FeedRegistry {
    /// A registry whose feeds are copies of the feeds of `store`, which several instances share
    /// (decision 0006): ``SharedFeeds`` keeps them; start a ``SharedFeedFollower`` to follow the
    /// store's events and check the copies' positions.
    /// - Parameter idleFeedLifetime: how long an unused copy of a feed is kept.
    /// - Parameter clock: monotonic seconds, for `idleFeedLifetime`.
    public init(replayLimit: Int = 1024, transport: (any EventBroadcaster)? = nil, metrics: FeedMetrics = FeedMetrics(), sharing store: any SharedFeedStore,
                storage: StorageAccount = StorageAccount(), logger: Logger = Logger(label: "diffstream"), idleFeedLifetime: Double = 60,
                clock: @escaping @Sendable () -> Double = MonotonicClock.now) {
        let copies = SharedFeeds(store: store, replayLimit: replayLimit, transport: transport, metrics: metrics, storage: storage,
                                 logger: logger, idleFeedLifetime: idleFeedLifetime, clock: clock)
        self.init(metrics: metrics, store: store, storage: storage, logger: logger, source: copies)
    }

    /// The copies of the shared store's feeds (nil: this registry holds the authority of its feeds).
    public nonisolated var sharedFeeds: SharedFeeds? { source as? SharedFeeds }
}
