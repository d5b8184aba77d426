import DiffStreamJSON

/// Who one presence connection is: a token's subject, or no one in particular.
public enum PresenceUser: Hashable, Sendable {
    /// A token's subject (`sub`), with its display name (the token's `name` claim, nil when none).
    /// All of one subject's connections are one present user.
    case identified(subject: String, name: String?)
    /// No subject. `carried` is the id the client keeps across its reopens (`presence-id`): its
    /// connections are one present user, so a reconnect within the grace period is no leave and join.
    /// Nil: the connection is a user of its own.
    case anonymous(carried: String?)
}

/// What one event stream that includes a feed with presence adds to it.
public struct PresenceConnection: Sendable, Equatable {
    /// The largest metadata a connection may carry: canonical JSON bytes of one object.
    public static let maxMetaBytes = 128

    public var user: PresenceUser
    /// The connection's own metadata (Phoenix's "meta": a device, a status), a JSON object of at most
    /// ``maxMetaBytes``; nil when none. Shown in the user's item, one entry per connection.
    public var meta: JSONModel?
    /// A hidden connection makes no one present: a user all of whose connections are hidden is not
    /// listed nor counted.
    public var hidden: Bool

    public init(user: PresenceUser, meta: JSONModel? = nil, hidden: Bool = false) {
        self.user = user
        self.meta = meta
        self.hidden = hidden
    }
}
