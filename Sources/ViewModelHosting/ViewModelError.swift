import FeedCore
import DiffStreamJSON

/// Why a hosted view model refused a change, an action or a patch. Nothing changed: the state and
/// the feed are as they were.
///
/// Thrown by ``ViewModelHost`` (``ViewModelHost/perform(_:body:)``, ``ViewModelHost/patch(body:)``,
/// ``ViewModelHost/update(_:)``) and by the input decoding of a ``HostedAction``. It knows nothing of
/// HTTP: `FeedAPI` chooses the status and the JSON error body for each case.
public enum ViewModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The input is not JSON; the parser's reason.
    case malformedJSON(String)
    /// The input is JSON, but not of the shape the view model takes (say, not an object).
    case invalidBody(String)
    /// One field of the input, or of the state a patch produced, is refused: where (`title`,
    /// `suggested[2].type`) and why. ``InvalidInput`` thrown by a view model becomes this.
    case invalidField(field: String, reason: String)
    /// The change threw an error of the view model's own (not ``InvalidInput``); its description.
    case changeRefused(String)
    /// ``HostedViewModel/render(_:)`` threw for the new state; the error's description.
    case renderFailed(String)
    /// The state could not be encoded as JSON (to store it, or to merge a patch into it); the reason.
    case stateNotEncodable(String)
    /// The view model has no action of that name.
    case unknownAction(feed: String, action: String)
    /// The view model does not take `PATCH` (``HostedViewModel/acceptsPatch``).
    case patchNotAccepted(feed: String)
    /// A member of a family whose loader is the truth (``FamilyTruth/program``): a `PATCH` would be undone
    /// when the member is made again, so it is refused.
    case patchUndoneByLoader(feed: String, family: String)
    /// The feed refused the new snapshot: a storage limit, or the durable store failed.
    case notPublished(FeedWriteError)
    /// A family's loader answered that `key` names nothing (``NoSuchMember``).
    case noSuchMember(feed: String, family: String, key: String)
    /// A family's loader threw: its message, nothing made (the next use tries again).
    case loaderFailed(feed: String, reason: String)
    /// A family's loader took longer than its ``FamilyLimits/loaderTimeout``.
    case loaderTimedOut(feed: String, seconds: Double)
    /// The family has ``FamilyLimits/maxLive`` members and none is idle: try again in `retryAfter` seconds.
    case familyFull(feed: String, family: String, maxLive: Int, retryAfter: Int)
    /// The state kept for `feed` can be neither decoded nor migrated by this program
    /// (``HostedViewModel/stateVersion``, ``HostedViewModel/migrate(from:_:)``): the reason. It is left as
    /// it is, and the feed is not made or changed until a program reads it or it is reset.
    case keptStateUnreadable(feed: String, reason: String)

    /// What went wrong, in words a user can act on (the `detail` of an HTTP error body).
    public var description: String {
        switch self {
        case .malformedJSON(let reason), .invalidBody(let reason), .changeRefused(let reason):
            reason
        case .invalidField(let field, let reason):
            "\(field): \(reason)"
        case .renderFailed(let reason):
            "the view model could not render the new state, so nothing changed: \(reason)"
        case .stateNotEncodable(let reason):
            "the view model's state cannot be written as JSON: \(reason)"
        case .unknownAction(let feed, let action):
            "no action '\(action.prefix(80))' on feed '\(feed)'"
        case .patchNotAccepted(let feed):
            "the view model of feed '\(feed)' does not take PATCH"
        case .patchUndoneByLoader(let feed, let family):
            "the family '\(family)' makes its members from its loader (truth: .program), which would undo a PATCH of '\(feed)' when it is made again; nothing changed (a family hosted with truth: .kept keeps what clients write)"
        case .notPublished(.limit(let exceeded)):
            exceeded.description
        case .notPublished(.store(let error)):
            "\(error.description); the change was not stored"
        case .notPublished(.conflict):
            "other instances changed the state first at every attempt; the change was not stored"
        case .notPublished(.fenced):
            "another instance runs this view model's source; the change was not stored"
        case .notPublished(.idempotencyKeyReused):
            "this Idempotency-Key was sent with another request; the change was not run"
        case .notPublished(.busy(let limit)):
            "\(limit) changes already wait for this feed; the change was not run"
        case .noSuchMember(let feed, let family, let key):
            "no feed named '\(feed)': the family '\(family)' has no such key '\(key)'"
        case .loaderFailed(let feed, let reason):
            "the loader of '\(feed)' failed, so nothing was made (the next request tries again): \(reason)"
        case .loaderTimedOut(let feed, let seconds):
            "the loader of '\(feed)' took longer than \(seconds) s, so nothing was made (the next request tries again)"
        case .familyFull(let feed, let family, let maxLive, _):
            "'\(feed)' cannot be made now: the family '\(family)' has its most live members (\(maxLive)) and none is idle"
        case .keptStateUnreadable(let feed, let reason):
            "the state kept for '\(feed)' cannot be read by this program, so it is left as it is and '\(feed)' is not made or changed: \(reason). A program whose view model migrates it reads it; DELETE /feeds/\(feed)?reset=kept-state discards it"
        }
    }
}
