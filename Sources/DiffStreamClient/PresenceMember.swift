/// A user present on a feed, as its presence feed (`_presence.FEED`, docs/protocol.md "Who is here")
/// lists them: follow it with
/// `client.snapshots(of: "_presence.board", as: Snapshot<PresenceSummary, PresenceMember>.self)`.
/// `name` and `subject` are there only where the server shows identities (`--presence-names`).
public struct PresenceMember: Identifiable, Hashable, Decodable, Sendable {
    /// The item's id: an HMAC that names the user alike in every update and says nothing of them.
    public var id: String
    public var name: String?
    public var subject: String?
    /// Their event streams that include the feed (a browser's tabs that share one stream count once).
    public var connections: Int
    /// When they joined, in seconds since 1970.
    public var since: Double

    private enum Keys: String, CodingKey { case id, model }
    private enum ModelKeys: String, CodingKey { case name, sub, connections, since }

    public init(from decoder: any Decoder) throws {
        let item = try decoder.container(keyedBy: Keys.self)
        id = try item.decode(String.self, forKey: .id)
        let model = try item.nestedContainer(keyedBy: ModelKeys.self, forKey: .model)
        name = try model.decodeIfPresent(String.self, forKey: .name)
        subject = try model.decodeIfPresent(String.self, forKey: .sub)
        connections = try model.decode(Int.self, forKey: .connections)
        since = try model.decode(Double.self, forKey: .since)
    }
}

/// A presence feed's one section: how many users are present, and how many of them it lists (the
/// first 100 in join order at most).
public struct PresenceSummary: Identifiable, Hashable, Decodable, Sendable {
    public var id: String
    public var count: Int
    public var listed: Int

    private enum Keys: String, CodingKey { case id, model }
    private enum ModelKeys: String, CodingKey { case count, listed }

    public init(from decoder: any Decoder) throws {
        let section = try decoder.container(keyedBy: Keys.self)
        id = try section.decode(String.self, forKey: .id)
        let model = try section.nestedContainer(keyedBy: ModelKeys.self, forKey: .model)
        count = try model.decode(Int.self, forKey: .count)
        listed = try model.decode(Int.self, forKey: .listed)
    }
}
