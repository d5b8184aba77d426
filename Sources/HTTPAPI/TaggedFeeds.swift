import FeedCore
import HTTPCore
import Synchronization

/// The ``TaggedFanOut`` of each feed that multi-feed streams carry now: a slot joins its feed's
/// fan-out, made when the first slot arrives and dropped once it has ended (its last slot left, or the
/// feed ended it). Keyed by the ``Feed`` itself, not its name: with a shared store, a name's copy is
/// replaced once idle, and a slot opened on the new copy gets a fan-out of its own.
package final class TaggedFeeds: Sendable {
    private let fanOuts = Mutex<[ObjectIdentifier: TaggedFanOut]>([:])

    package init() {}

    /// How many fan-outs there are (one per feed carried).
    package var count: Int { fanOuts.withLock { $0.count } }

    /// Adds `slot` to `feed`'s fan-out, resuming from `lastEventID` (see ``TaggedFanOut/join(_:lastEventID:)``).
    /// A fan-out that ends while the slot joins (its last slot left meanwhile) is replaced by a new one.
    package func join(_ slot: any EventSink, to feed: Feed, lastEventID: String?) async {
        let key = ObjectIdentifier(feed)
        while true {
            let (fanOut, made) = fanOuts.withLock { fanOuts -> (TaggedFanOut, Bool) in
                if let fanOut = fanOuts[key] { return (fanOut, false) }
                let fanOut = TaggedFanOut(feed: feed)
                fanOuts[key] = fanOut
                return (fanOut, true)
            }
            if made { fanOut.onTermination { [self] in drop(fanOut, key) } }
            if await fanOut.join(slot, lastEventID: lastEventID) { return }
            drop(fanOut, key)
        }
    }

    /// Forgets `fanOut` once it has ended, unless a new one has taken its place.
    private func drop(_ fanOut: TaggedFanOut, _ key: ObjectIdentifier) {
        fanOuts.withLock { fanOuts in
            if fanOuts[key] === fanOut { fanOuts[key] = nil }
        }
    }
}
