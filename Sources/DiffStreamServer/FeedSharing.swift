import Presence
import FeedStorage
import Logging

/// Where feeds are kept when several instances serve them together: the store is the authority for
/// every feed, and each instance's feeds are copies of it (docs/decisions/0003-redis.md).
///
/// A product of its own implements it, so a program that keeps its feeds in memory or in a data
/// directory links no client for it: `RedisSharing` in `DiffStreamRedis` keeps them in Redis.
/// ``Server/Configuration/sharing`` names one; the server opens it at start in place of the data
/// directory, and closes it at shutdown.
public protocol FeedSharing: Sendable {
    /// ``Server/Configuration/maxStoreBytes`` when none is given: a limit over every instance, which
    /// one machine's memory or disk cannot tell.
    var defaultMaxStoreBytes: Int { get }

    /// Opens the shared store with the settings every instance must agree on. A store that cannot be
    /// reached yet may be waited for, until ``SharingStart/stopRequested(within:)`` says the server
    /// is being stopped (then throw ``Server/StartError/Kind/stopped``).
    func open(_ start: SharingStart) async throws(Server.StartError) -> OpenedSharing
}

/// What ``FeedSharing/open(_:)`` is given: the settings every instance sharing the store must have in
/// common, the server's logger, and whether a stop was asked for.
public struct SharingStart: Sendable {
    /// Batches kept per feed (``Server/Configuration/replay``).
    public var replay: Int
    /// ``Server/Configuration/maxFeeds``.
    public var maxFeeds: Int
    /// ``Server/Configuration/maxFeedBytes``.
    public var maxFeedBytes: Int
    /// ``Server/Configuration/maxStoreBytes``, or the sharing's default.
    public var maxStoreBytes: Int
    /// ``Server/Configuration/dataDirectory``, which a shared store replaces (worth a line in the log).
    public var dataDirectory: String?
    /// Where the store's lines go.
    public var logger: Logger
    let stop: StopRequest

    /// Whether the server was asked to stop by the end of `duration` (waits that long at most).
    public func stopRequested(within duration: Duration) async -> Bool {
        await stop.wait(upTo: duration)
    }
}

/// An open shared store, and how to close it (at shutdown, after the last write).
public struct OpenedSharing: Sendable {
    /// The store the feeds are kept in.
    public var store: any SharedFeedStore
    /// Closes the store's connections.
    public var close: @Sendable () -> Void
    /// Where the instances share who is present on their feeds (issue 55); nil: each instance's
    /// presence feeds show its own streams only.
    public var presence: (any PresenceSharing)?

    /// `store`, closed by `close`.
    public init(store: any SharedFeedStore, close: @escaping @Sendable () -> Void, presence: (any PresenceSharing)? = nil) {
        self.store = store
        self.close = close
        self.presence = presence
    }
}
