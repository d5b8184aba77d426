import FeedCore
import Testing
import ViewModelHosting

struct FamilyMemberNameTests {
    @Test(arguments: [
        ("home", nil),
        ("app.home", nil),
        ("user_feeds-2", nil),
        (String(repeating: "p", count: 29), nil),
        (String(repeating: "p", count: 30), "longer than 29"),
        ("", "not a feed id"),
        (".home", "not a feed id"),
        ("ho me", "not a feed id"),
        ("home.", "ends with a dot"),
    ] as [(String, String?)])
    func aPrefixIsAShortFeedIDNotEndingWithADot(prefix: String, problem: String?) {
        if let problem {
            #expect(FamilyMemberName.prefixProblem(prefix)?.contains(problem) == true)
        } else {
            #expect(FamilyMemberName.prefixProblem(prefix) == nil)
        }
    }

    @Test(arguments: [
        ("home", "alice", "home.alice"),
        ("home", "a.b", "home.a.b"),
        ("home", "_40x", "home._40x"),
        ("home", "..", "home..."),
        ("home", String(repeating: "k", count: 59), "home." + String(repeating: "k", count: 59)),
        ("home", String(repeating: "k", count: 60), nil),  // 65 characters
        ("home", "", nil),
        ("home", "al ice", nil),
        ("home", "zoë", nil),
        ("home.", "alice", nil),
    ] as [(String, String, String?)])
    func aMemberIsPrefixDotKeyWithinSixtyFourCharacters(prefix: String, key: String, name: String?) {
        let member = FamilyMemberName(prefix: prefix, key: key)
        #expect(member?.name == name)
        if let name { #expect(FeedID.isValid(name)) }
    }

    @Test(arguments: [
        ("home.alice", "home", "alice"),
        ("home.eu.alice", "home.eu", "alice"),  // the longest prefix
        ("home.a.b", "home", "a.b"),  // a key may hold dots
        ("home.eu", "home", "eu"),
        ("home...", "home", ".."),
        ("todo.list.x", "todo.list", "x"),
        ("homework", nil, nil),  // `home` does not capture `homework`
        ("homework.alice", nil, nil),
        ("home", nil, nil),  // the shared `home` feed is no member
        ("home.", nil, nil),
        ("week.alice", nil, nil),
        ("ho me.alice", nil, nil),
    ] as [(String, String?, String?)])
    func aFeedNameIsParsedByTheLongestFamilyPrefix(name: String, prefix: String?, key: String?) {
        let member = FamilyMemberName(parsing: name, prefixes: ["home", "home.eu", "todo.list"])
        #expect(member?.prefix == prefix)
        #expect(member?.key == key)
        if let member { #expect(member.name == name) }
    }

    @Test func aPrefixBeyondTheLongestIsNeverMatched() {
        let long = String(repeating: "p", count: 30)
        #expect(FamilyMemberName(parsing: long + ".k", prefixes: [long]) == nil)
        let longest = String(repeating: "p", count: 29)
        #expect(FamilyMemberName(parsing: longest + ".k", prefixes: [longest])?.key == "k")
    }

    @Test(arguments: [
        ("alice", "home.alice"),
        ("alice@example.com", "home.alice_40example.com"),
        ("auth0|5f1c", "home.auth0_7C5f1c"),
    ])
    func aSubjectBecomesAMemberThroughSubjectKey(subject: String, name: String) throws {
        let member = try #require(FamilyMemberName(prefix: "home", subject: subject))
        #expect(member.name == name)
        #expect(FamilyMemberName(parsing: member.name, prefixes: ["home"]) == member)
    }

    @Test func everyPrefixLeavesRoomForAHashedSubject() throws {
        let prefix = String(repeating: "p", count: FamilyMemberName.maxPrefixLength)
        let subject = String(repeating: "ü", count: 40)
        let member = try #require(FamilyMemberName(prefix: prefix, subject: subject, mapping: .hashed))
        #expect(member.key.hasPrefix("_h") && member.name.utf8.count == 64)
        #expect(FamilyMemberName(prefix: prefix, subject: "", mapping: .escaped) == nil)
    }
}
