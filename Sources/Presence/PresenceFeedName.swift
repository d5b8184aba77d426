import Crypto

/// The names of presence feeds (docs/protocol.md, "Who is here"): `_presence.F` for a feed `F` of at
/// most 54 characters, `_presence-` and 32 hexadecimal digits of `F`'s SHA-256 for a longer one. Both
/// are valid feed names, and neither can be a family's member (a family's prefix cannot start with `_`
/// and a key cannot hold the whole prefix), nor a feed of its own: names that start with `_presence.`
/// or `_presence-` are reserved.
public enum PresenceFeedName {
    /// What every presence feed's name starts with.
    public static let prefix = "_presence."
    /// What a hashed presence feed's name starts with.
    public static let hashedPrefix = "_presence-"
    /// The longest feed whose presence feed is named by prefix alone.
    public static let longestPlain = 64 - prefix.utf8.count

    /// The presence feed of `feed`.
    /// - Complexity: O(length of `feed`).
    public static func of(_ feed: String) -> String {
        if feed.utf8.count <= longestPlain { return prefix + feed }
        let digest = SHA256.hash(data: Array(feed.utf8))
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest.prefix(16) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return hashedPrefix + String(decoding: text, as: UTF8.self)
    }

    /// Whether `name` is reserved for presence feeds (whether or not such a feed is on).
    public static func isReserved(_ name: String) -> Bool {
        name.hasPrefix(prefix) || name.hasPrefix(hashedPrefix)
    }

    /// The feed whose presence `name` is, when `name` says it (`_presence.F`); nil for a hashed name
    /// (``PresenceFeeds`` knows the feeds it was asked about) or any other.
    public static func plainTarget(of name: String) -> String? {
        guard name.hasPrefix(prefix) else { return nil }
        let target = String(name.dropFirst(prefix.count))
        return target.isEmpty ? nil : target
    }
}
