import ServerSentEvents

/// What a new subscriber of a feed gets first (``Feed/join(_:lastEventID:admit:)``; ``Feed/subscribe(_:lastEventID:)``
/// sends the same): worked out on the feed's actor, in order with its broadcasts.
package enum FeedOpening: Sendable {
    /// The feed does not exist: the subscriber ends with this `event: deleted`.
    case deleted(EventPayload)
    /// The batches it missed since its last event id (nil: it is current).
    case missed(EventPayload?)
    /// The current snapshot event: the same payload for every subscriber of one version.
    case snapshot(EventPayload)
    /// The copy is behind the subscriber's last event id and the shared store cannot be read: nothing
    /// yet (the refresh after the outage brings what it missed).
    case behind

    /// The events to send first, if any (`deleted` included).
    package var payload: EventPayload? {
        switch self {
        case .deleted(let payload), .snapshot(let payload): payload
        case .missed(let payload): payload
        case .behind: nil
        }
    }
}
