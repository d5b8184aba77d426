/// Where the instances of one deployment share what each knows of a feed's presence (under
/// `--redis`, Redis): each instance publishes its own share, and its presence feed shows the merge of
/// its share and those of the other live instances (``PresenceMerge``). An instance that dies stops
/// counting once its liveness lapses: no ghosts past that.
public protocol PresenceSharing: Sendable {
    /// The secret every instance of the deployment names users with (``PresenceItemIDs/init(secret:)``),
    /// so that one user is one item whichever instances their streams are on.
    var secret: [UInt8] { get }
    /// Replaces this instance's share of `feed`'s presence: a presence snapshot as `WireCodec` encodes
    /// it; nil removes it.
    func publish(feed: String, share: [UInt8]?) async
    /// The shares of `feed`'s presence of the other instances alive now.
    func shares(of feed: String) async -> [[UInt8]]
}
