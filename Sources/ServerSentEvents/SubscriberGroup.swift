/// A subscriber that stands for many: it forwards what its feed sends to members of its own (the
/// feed's slots on multi-feed streams). The feed holds it as one subscriber, broadcasts to it once,
/// and counts it as ``memberCount`` subscribers (the `diffstream_feed_subscribers` metric, and whether
/// the feed is idle); the group tells the feed when that count changes.
public protocol SubscriberGroup: EventSink {
    /// The members it forwards to now (0 once it has ended).
    var memberCount: Int { get }
}
