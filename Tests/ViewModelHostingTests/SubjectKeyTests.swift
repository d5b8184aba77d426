import FeedCore
import ViewModelHosting
import Testing
import TestSupport

struct SubjectKeyTests {
    @Test(arguments: [
        ("alice", "alice"),
        ("alice@example.com", "alice_40example.com"),
        ("auth0|5f1c", "auth0_7C5f1c"),
        ("a_b", "a_5Fb"),  // the escape character is escaped itself
        ("Zoë", "Zo_C3_AB"),
        ("two words", "two_20words"),
        ("..", ".."),
        ("-", "-"),
    ])
    func escapesWhatTheAlphabetLacks(subject: String, key: String) {
        #expect(SubjectKey.escaped.key(for: subject, prefix: "home") == key)
        #expect(FeedID.isValid("home." + key))
    }

    @Test func aSubjectTooLongToEscapeIsHashedToFit() throws {
        let subject = String(repeating: "ü", count: 30)  // 60 bytes, 180 escaped
        let key = try #require(SubjectKey.escaped.key(for: subject, prefix: "home"))
        #expect(key.hasPrefix("_h") && key.utf8.count == 59)  // 64 - "home." = 59: 57 hex digits
        #expect(key == SubjectKey.hashed.key(for: subject, prefix: "home"))
        #expect(key.dropFirst(2).allSatisfy { $0.isHexDigit && !$0.isUppercase })
        // Exactly the room left by the prefix: a longer prefix leaves fewer digits.
        #expect(SubjectKey.hashed.key(for: subject, prefix: String(repeating: "p", count: 20))?.utf8.count == 43)
    }

    @Test func noKeyWhenTheDigestWouldNotFitOrThereIsNoSubject() {
        #expect(SubjectKey.hashed.key(for: "alice", prefix: String(repeating: "p", count: 30)) == nil)  // 33 left: 31 digits < 32
        #expect(SubjectKey.hashed.key(for: "alice", prefix: String(repeating: "p", count: 29)) != nil)
        #expect(SubjectKey.escaped.key(for: "", prefix: "home") == nil)
        #expect(SubjectKey.escaped.key(for: "alice", prefix: String(repeating: "p", count: 63)) == nil)
    }

    @Test(arguments: [("user-7", "user-7"), ("bad key", nil), ("", nil), (String(repeating: "k", count: 60), nil)] as [(String, String?)])
    func aCustomMappingIsCheckedLikeTheOthers(returned: String, key: String?) {
        let mapping = SubjectKey.custom { _ in returned }
        #expect(mapping.key(for: "anyone", prefix: "home") == key)
    }

    /// Seeded random subjects (ASCII, the escape character, multi-byte UTF-8, lengths 1 to 40): every
    /// key is a valid name that fits, and no two subjects share one (the escaped keys decode back).
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func keysAreValidAndInjective(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let alphabet: [Character] = Array("aZ09-._|@+ /é漢🦊") + ["\u{0}"]
        var seen: [String: String] = [:]
        for _ in 0..<2000 {
            let subject = String((0..<Int.random(in: 1...40, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            let prefix = ["home", "week", String(repeating: "p", count: 20)].randomElement(using: &random)!
            let key = try #require(SubjectKey.escaped.key(for: subject, prefix: prefix))
            #expect(FeedID.isValid(prefix + "." + key))
            if !key.hasPrefix("_h") { #expect(Self.unescape(key) == Array(subject.utf8)) }
            if let other = seen[prefix + "." + key] { #expect(other == subject) }
            seen[prefix + "." + key] = subject
        }
    }

    /// The escaped form decoded: the oracle for injectivity.
    static func unescape(_ key: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var iterator = Array(key.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "_") else { bytes.append(byte); continue }
            let high = iterator.next().flatMap { Int(String(UnicodeScalar($0)), radix: 16) } ?? 0
            let low = iterator.next().flatMap { Int(String(UnicodeScalar($0)), radix: 16) } ?? 0
            bytes.append(UInt8(high * 16 + low))
        }
        return bytes
    }
}
