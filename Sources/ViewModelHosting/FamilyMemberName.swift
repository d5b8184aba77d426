import FeedCore

/// The feed name of a member of a family: `PREFIX.KEY` (`home.alice`), a valid feed id of at most 64
/// characters.
///
/// - The prefix is a feed id of at most ``maxPrefixLength`` characters that does not end with a dot,
///   so every prefix leaves room for any subject's key (``SubjectKey/hashed`` needs 34 characters).
/// - The key is one or more of the feed-name characters `A-Z a-z 0-9 . _ -` (dots too), as long as
///   the whole name fits. A token's subject becomes a key with ``SubjectKey`` (``init(prefix:subject:mapping:)``).
/// - A feed name belongs to the family with the longest prefix followed by a dot: with the families
///   `home` and `home.eu`, `home.eu.x` is `home.eu`'s `x`; `homework` and `home` itself are no one's.
package struct FamilyMemberName: Hashable, Sendable {
    /// The family's prefix.
    package let prefix: String
    /// The member's key.
    package let key: String

    /// The longest prefix: 64, less the dot, less the 34 characters of a hashed subject (`_h` and 32
    /// hex digits).
    package static let maxPrefixLength = 29

    /// The feed name, `prefix.key`.
    package var name: String { prefix + "." + key }

    /// Why `prefix` cannot name a family, or nil when it can.
    /// - Complexity: O(n) in its length.
    package static func prefixProblem(_ prefix: String) -> String? {
        guard FeedID.isValid(prefix) else { return "'\(prefix)' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)" }
        if prefix.utf8.count > maxPrefixLength {
            return "the family prefix '\(prefix)' is longer than \(maxPrefixLength) characters, leaving too little room for keys"
        }
        if prefix.utf8.last == UInt8(ascii: ".") { return "the family prefix '\(prefix)' ends with a dot" }
        // Presence feeds' names (`PresenceFeedName`, docs/protocol.md "Who is here") are reserved.
        if prefix == "_presence" || prefix.hasPrefix("_presence.") || prefix.hasPrefix("_presence-") {
            return "the family prefix '\(prefix)' would make names reserved for presence feeds (_presence.F)"
        }
        return nil
    }

    /// The member `key` of the family `prefix`, or nil when the prefix cannot name a family or the key
    /// is empty, has a character outside the feed-name alphabet, or makes the name too long.
    /// - Complexity: O(n) in the name's length.
    package init?(prefix: String, key: String) {
        guard Self.prefixProblem(prefix) == nil, !key.isEmpty, FeedID.isValid(prefix + "." + key) else { return nil }
        self.prefix = prefix
        self.key = key
    }

    /// The member of the family `prefix` bound to the token subject `subject`, its key made by
    /// `mapping`; nil when the subject has no key there.
    /// - Complexity: O(n) in the subject's length.
    package init?(prefix: String, subject: String, mapping: SubjectKey = .escaped) {
        guard Self.prefixProblem(prefix) == nil, let key = mapping.key(for: subject, prefix: prefix) else { return nil }
        self.init(prefix: prefix, key: key)
    }

    /// The member the feed `name` is, among the families `prefixes`: the longest prefix followed by a
    /// dot and a key. Nil when `name` is not a feed id or no family has it.
    /// - Complexity: O(n²) in the name's length (at most 64): a set lookup per dot.
    package init?(parsing name: String, prefixes: Set<String>) {
        guard FeedID.isValid(name) else { return nil }
        let bytes = Array(name.utf8)
        // The rightmost dot leaves the longest prefix; the key after it must not be empty.
        for dot in stride(from: min(bytes.count - 2, Self.maxPrefixLength), through: 1, by: -1) where bytes[dot] == UInt8(ascii: ".") {
            let prefix = String(decoding: bytes[..<dot], as: UTF8.self)
            if prefixes.contains(prefix) {
                self.init(prefix: prefix, key: String(decoding: bytes[(dot + 1)...], as: UTF8.self))
                return
            }
        }
        return nil
    }
}
