import CoreMetrics
import DiffStreamJSON
import FeedCore
import FeedReplication
import FeedStorage
import Foundation
import Synchronization

/// What a family's loader throws for a key that names nothing: the request gets `404` ("no such
/// key"), and the key is answered so without the loader for ``FamilyLimits/notFoundMemory`` seconds.
public struct NoSuchMember: Error, Sendable {
    public init() {}
}

/// A member being made, as its family's loader sees it: the key, the feed's name, and the sources the
/// instance follows while it is live (stopped when it is dropped or deleted).
public final class FamilyMember<Model: HostedViewModel>: Sendable {
    /// The member's key: `alice` for `home.alice`.
    public let key: String
    /// The member's feed: `home.alice`.
    public let feed: String
    /// The state kept for this key when it is made again (with a store for members, or a store several
    /// instances share), else nil. With ``FamilyTruth/kept`` it is what the member is made from; a
    /// ``FamilyTruth/program`` loader may merge from it what its program does not hold.
    public let kept: Model.State?
    private let sources = Mutex<[@Sendable (ViewModelHost<Model>, SharedLease?) -> Task<Void, any Error>]>([])

    init(key: String, feed: String, kept: Model.State? = nil) {
        self.key = key
        self.feed = feed
        self.kept = kept
    }

    /// Drives this member from `source` while it is live (``ViewModelHost/follow(_:update:)``): each
    /// element updates its state. The source starts once the member is made and stops when it is
    /// dropped (idle) or deleted.
    public func follow<Source: AsyncSequence & Sendable>(
        _ source: Source, update: @escaping @Sendable (inout Model.State, Source.Element) throws -> Void
    ) where Source.Element: Sendable {
        sources.withLock {
            $0.append { host, shard in
                if let shard { host.follow(source, under: shard, update: update) } else { host.follow(source, update: update) }
            }
        }
    }

    /// Starts the sources the loader attached, on the made member: under its shard's lease with a store
    /// several instances share (decision 0008), else as ``ViewModelHost/follow(_:update:)`` does.
    func start(on host: ViewModelHost<Model>, shard: SharedLease?) -> [Task<Void, any Error>] {
        sources.withLock { $0 }.map { $0(host, shard) }
    }
}
