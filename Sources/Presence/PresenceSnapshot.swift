import DiffStreamJSON

/// Who is present on a feed, as a program reads it (a hosted view model's source, to show "3 people
/// editing" or to stop a source when nobody watches): what the presence feed shows, typed.
public struct PresenceSnapshot: Sendable, Equatable {
    /// How many users are present.
    public var count: Int
    /// The first of them in join order (at most ``PresenceTracker/Settings/listed``).
    public var users: [PresentUser]

    public init(count: Int, users: [PresentUser]) {
        self.count = count
        self.users = users
    }

    /// A presence feed's snapshot, typed.
    /// - Complexity: O(users).
    public init(_ snapshot: WireSnapshot) {
        count = snapshot.sections.first?.model["count"]?.numberValue.map { Int($0) } ?? 0
        users = PresenceSteps.items(of: snapshot).map(PresentUser.init)
    }

    /// The listed users who joined and left since `previous`.
    /// - Complexity: O(users of both).
    public func changes(since previous: PresenceSnapshot) -> (joined: [PresentUser], left: [PresentUser]) {
        let before = Set(previous.users.map(\.id)), now = Set(users.map(\.id))
        return (users.filter { !before.contains($0.id) }, previous.users.filter { !now.contains($0.id) })
    }
}

/// One present user: an item of a presence feed.
public struct PresentUser: Sendable, Equatable, Identifiable {
    /// The item's id (an HMAC: it names the user alike in every snapshot, and says nothing of them).
    public var id: String
    /// The token's `name` and `sub`, where the feed shows identities.
    public var name: String?
    public var subject: String?
    /// Their event streams that include the feed.
    public var connections: Int
    /// When they joined, in seconds since 1970.
    public var since: Double
    /// Their streams' metadata (`presence-meta`).
    public var metas: [JSONValue]

    init(_ item: WireItem) {
        let model = item.model.value
        id = item.id.string
        name = model["name"]?.stringValue
        subject = model["sub"]?.stringValue
        connections = model["connections"]?.numberValue.map { Int($0) } ?? 0
        since = model["since"]?.numberValue ?? 0
        metas = model["metas"]?.arrayValue ?? []
    }
}
