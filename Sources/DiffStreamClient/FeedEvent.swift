import DiffStream
import DiffStreamJSON
import Foundation

/// One element of a feed client's sequence: an update, or something the app may want to act on.
/// Errors of the server are elements, not thrown: the sequence goes on (retrying) unless the app stops.
public enum FeedEvent<Section: Identifiable & Equatable & Sendable, Item: Identifiable & Equatable & Sendable>: Sendable
where Section.ID: Sendable, Item.ID: Sendable {
    /// The feed's new state.
    case update(FeedUpdate<Section, Item>)
    /// The feed was deleted (`event: deleted`). The client retries with backoff; when the feed appears
    /// again its snapshot follows as `.full(.newHistory)` (a feed created again starts a new history).
    /// Stop iterating to stop following.
    case deleted(feed: String)
    /// `401`, or `event: unauthorized` (an expired token). The token hook is asked for a fresh token;
    /// with one the client resumes, without one it stops following the feed.
    case unauthorized(FeedProblem)
    /// `403`, or `event: forbidden`: the token may not read the feed. As for `unauthorized`.
    case forbidden(FeedProblem)
    /// `404`, or `event: notfound`: retried with backoff; its snapshot follows when the feed appears.
    case notFound(FeedProblem)
    /// Any other answer (`400`, `5xx`, an unreadable event): retried with backoff except for `400`.
    case serverError(FeedProblem)
    /// A gap was found (a batch that does not follow the version held, another history, a version
    /// moving backwards): the client reconnects for a fresh snapshot, which follows as an update.
    case resyncing(feed: String, reason: String)
    /// The server cannot reach its store (Redis) for this feed (`event: unavailable`): the stream stays
    /// open and the last state received stays valid, but it may be out of date until ``available(feed:)``.
    /// Writes to the feed fail (`503`) meanwhile. Said once per outage; the feed's resume position is
    /// unchanged. After a reconnect the server says it again if the outage goes on; if it does not
    /// within ``FeedClient/outageGrace`` seconds of the new stream opening, `.available` follows.
    /// On a multi-feed stream, `unavailable` before any snapshot or batch of the feed means the server
    /// could not load it (it is not followed on that stream): the client retries it with backoff.
    case unavailable(feed: String, detail: String)
    /// The outage of ``unavailable(feed:detail:)`` is over (`event: available`, or a new stream that no
    /// longer reports it). What the feed missed follows as updates (batches, or a snapshot).
    case available(feed: String)
    /// The connection changed state.
    case connection(ConnectionState)
}

/// What the server said when it refused a feed or a request.
public struct FeedProblem: Error, Equatable, Sendable, CustomStringConvertible {
    /// The feed concerned; `nil` when the whole request was refused on a multi-feed stream.
    public var feed: String?
    /// The HTTP status, or `nil` for a refusal sent as an event on an open stream.
    public var status: Int?
    /// The server's short error (`not found`, `token expired`, …).
    public var error: String
    /// The server's detail, for a person.
    public var detail: String

    public init(feed: String?, status: Int?, error: String, detail: String) {
        self.feed = feed
        self.status = status
        self.error = error
        self.detail = detail
    }

    public var description: String {
        let head = [feed, status.map(String.init)].compactMap { $0 }.joined(separator: " ")
        return (head.isEmpty ? "" : head + ": ") + error + (detail.isEmpty ? "" : " (\(detail))")
    }
}

/// The state of the client's connection.
public enum ConnectionState: Equatable, Sendable {
    /// Opening a connection.
    case connecting
    /// The server answered `200`; events flow.
    case connected
    /// The connection ended or could not be made; the client reconnects after `retryIn`.
    case disconnected(reason: String, retryIn: TimeInterval)
    /// No byte (not even a heartbeat) arrived for 2.5 heartbeat intervals: the stream is taken as dead
    /// and the client reconnects.
    case stalled(silence: TimeInterval)
}

/// A feed's state after an event, with what the event changed.
public struct FeedUpdate<Section: Identifiable & Equatable & Sendable, Item: Identifiable & Equatable & Sendable>: Sendable
where Section.ID: Sendable, Item.ID: Sendable {
    /// How the update came.
    public typealias Change = UpdateChange

    /// The feed's name.
    public var feed: String
    /// The whole current state (for typed updates, without the elements that did not decode).
    public var snapshot: Snapshot<Section, Item>
    /// The feed's version.
    public var version: Int
    /// The feed's history (16 hex digits; compare for equality only). `nil` from a server without it.
    public var history: String?
    /// The event id to resume from (opaque).
    public var eventID: String
    /// A whole snapshot or a batch.
    public var change: Change
    /// For a batch, the operations that turn the previous update's snapshot into this one (for typed
    /// updates, the difference between the typed snapshots); empty for a full snapshot.
    public var operations: [DiffStream.Operation<Section, Item>]
    /// For a batch, the ids of the items whose content changed (reconfigure only these).
    public var changedItemIDs: [Item.ID]
    /// Sections and items of this update that did not decode (unknown kind, a model the app's type
    /// refuses): left out of ``snapshot``, reported here with their wire ids.
    public var undecodable: [UndecodableElement]

    /// Whether this is a whole snapshot.
    public var isFull: Bool { if case .full = change { true } else { false } }
    /// Whether this came from the offline cache and may be out of date.
    public var isStale: Bool { change == .full(.cached) }

    public init(feed: String, snapshot: Snapshot<Section, Item>, version: Int, history: String?, eventID: String, change: Change,
                operations: [DiffStream.Operation<Section, Item>] = [], changedItemIDs: [Item.ID] = [], undecodable: [UndecodableElement] = []) {
        self.feed = feed
        self.snapshot = snapshot
        self.version = version
        self.history = history
        self.eventID = eventID
        self.change = change
        self.operations = operations
        self.changedItemIDs = changedItemIDs
        self.undecodable = undecodable
    }
}

/// A section or item that did not decode into the app's type.
public struct UndecodableElement: Error, Equatable, Sendable, CustomStringConvertible {
    /// The wire id of the section or item.
    public var id: String
    /// The item's kind (`nil` for a section).
    public var kind: String?
    /// Why: the decoder's error.
    public var reason: String

    public init(id: String, kind: String?, reason: String) {
        self.id = id
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(kind.map { "item \($0) " } ?? "section ")\(id): \(reason)" }
}

/// The untyped form: the snapshot as it is on the wire.
public typealias WireFeedEvent = FeedEvent<WireSection, WireItem>
/// An untyped update.
public typealias WireFeedUpdate = FeedUpdate<WireSection, WireItem>

/// How an update came.
public enum UpdateChange: Equatable, Sendable {
    /// A whole snapshot (the first, a resync, a new history, or the offline cache's).
    case full(FullReason)
    /// One batch, applied to the previous update's snapshot.
    case batch
}
