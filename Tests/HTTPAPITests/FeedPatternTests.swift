import FeedCore
import HTTPAPI
import ViewModelHosting
import Testing

struct FeedPatternTests {
    @Test(arguments: [
        ("*", "home", true), ("*", "a", true),
        ("home", "home", true), ("home", "homes", false), ("home", "hom", false), ("home", "Home", false),
        ("user-42-*", "user-42-inbox", true), ("user-42-*", "user-42-", true), ("user-42-*", "user-421-inbox", false),
        ("user-42-*", "xuser-42-inbox", false),
        ("*-inbox", "user-42-inbox", true), ("*-inbox", "user-42-inbox2", false),
        ("a*b*c", "abc", true), ("a*b*c", "aXbYc", true), ("a*b*c", "aXcYb", false), ("a*b*c", "abcbc", true),
        ("a*b*c", "abcb", false), ("**", "x", true), ("a**", "a", true), ("*a*", "bab", true), ("*a*", "bbb", false),
        ("", "x", false), ("a.b", "aXb", false), ("a?b", "aXb", false), ("a?b", "a?b", true),
    ])
    func matchesOnlyWhereStarsAllow(pattern: String, name: String, expected: Bool) {
        #expect(FeedPattern(pattern).matches(name) == expected, "\(pattern) vs \(name)")
    }

    /// Seeded random patterns and names against a recursive oracle.
    @Test func agreesWithARecursiveOracle() {
        func oracle(_ p: Substring, _ n: Substring) -> Bool {
            guard let first = p.first else { return n.isEmpty }
            if first == "*" { return oracle(p.dropFirst(), n) || (!n.isEmpty && oracle(p, n.dropFirst())) }
            return n.first == first && oracle(p.dropFirst(), n.dropFirst())
        }
        let seed: UInt64 = 0x5EED_13
        var state = seed
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        let alphabet: [Character] = ["a", "b", "-", "*"]
        for round in 0..<5000 {
            let pattern = String((0..<next(7)).map { _ in alphabet[next(4)] })
            let name = String((0..<next(9)).map { _ in alphabet[next(3)] })
            #expect(FeedPattern(pattern).matches(name) == oracle(Substring(pattern), Substring(name)),
                    "seed \(seed) round \(round): '\(pattern)' vs '\(name)'")
        }
    }
}
