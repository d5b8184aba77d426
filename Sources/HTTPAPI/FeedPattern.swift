import FeedCore
import ViewModelHosting
/// A feed-name pattern from a token's `subscribe` or `publish` list: a feed name in which `*` matches
/// any run of characters (including none). `"*"` matches every feed, `"user-42-*"` every feed whose
/// name starts with `user-42-`, and `"home"` only `home`. No other character is special.
public struct FeedPattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    private let pattern: [UInt8]

    public init(_ text: String) {
        self.text = text
        self.pattern = Array(text.utf8)
    }

    public var description: String { text }

    /// Whether `name` matches the whole pattern.
    ///
    /// - Complexity: O(n × m) in the worst case for a name of n bytes and a pattern of m bytes (greedy
    ///   matching that backtracks only to the last `*`), O(n + m) without stars. Feed names are at most
    ///   64 bytes.
    public func matches(_ name: String) -> Bool {
        let star = UInt8(ascii: "*")
        let name = Array(name.utf8)
        var p = 0, n = 0
        var lastStar = -1, resumeAt = 0
        while n < name.count {
            if p < pattern.count, pattern[p] != star, pattern[p] == name[n] {
                p += 1
                n += 1
            } else if p < pattern.count, pattern[p] == star {
                lastStar = p
                resumeAt = n
                p += 1
            } else if lastStar >= 0 {
                // Let the last star swallow one more byte and retry from there.
                p = lastStar + 1
                resumeAt += 1
                n = resumeAt
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == star { p += 1 }
        return p == pattern.count
    }
}

extension Array where Element == FeedPattern {
    /// Whether any pattern matches `name`.
    public func anyMatches(_ name: String) -> Bool { contains { $0.matches(name) } }
}
