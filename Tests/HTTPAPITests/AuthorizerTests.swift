import FeedCore
import HTTPAPI
import ViewModelHosting
import EpollRuntime
import Testing

struct AuthorizerTests {
    typealias F = TokenFixtures
    static let admin = "admin-token-123"

    enum Outcome: Equatable { case allow, unauthorized, forbidden }

    func outcome(_ decision: AuthorizationDecision) -> Outcome {
        switch decision {
        case .allow: .allow
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        }
    }

    func authorizer(privateReads: Bool = true, openWrites: Bool = true, jwt: Bool = true, admin: String? = admin) async throws -> Authorizer {
        Authorizer(
            policy: AccessPolicy(adminToken: admin, privateReads: privateReads, publicFeeds: ["lobby"], openWrites: openWrites),
            verifier: jwt ? try await JWTVerifier(hmacSecret: F.secret) : nil)
    }

    func bearer(_ token: String) -> HTTPHeaders { ["Authorization": "Bearer \(token)"] }

    /// The access matrix without sockets: a user-42 token, the admin token and no token, against reads,
    /// event streams, writes and public actions of its own feed, another user's feed and a public feed.
    @Test func theAccessMatrix() async throws {
        let auth = try await authorizer()
        let user = try await F.hs256(F.claims(subscribe: ["user-42-*", "lobby"], publish: ["user-42-inbox"]))
        let cases: [(String?, Access, Outcome)] = [
            (user, .read("user-42-inbox"), .allow), (user, .subscribe("user-42-feed"), .allow), (user, .write("user-42-inbox"), .allow),
            (user, .write("user-42-feed"), .forbidden), (user, .read("user-7-inbox"), .forbidden), (user, .subscribe("user-7-inbox"), .forbidden),
            (user, .write("lobby"), .forbidden), (user, .read("lobby"), .allow), (user, .publicAction("user-7-x"), .forbidden),
            (user, .publicAction("user-42-inbox"), .allow), (user, .publicAction("user-42-x"), .forbidden), (user, .list, .allow),
            (Self.admin, .read("user-7-inbox"), .allow), (Self.admin, .write("anything"), .allow), (Self.admin, .subscribe("x"), .allow),
            (nil, .read("user-42-inbox"), .unauthorized), (nil, .subscribe("user-42-inbox"), .unauthorized), (nil, .write("lobby"), .unauthorized),
            (nil, .read("lobby"), .allow), (nil, .subscribe("lobby"), .allow), (nil, .publicAction("lobby"), .unauthorized), (nil, .list, .allow),
            (nil, .publicAction("user-42-x"), .unauthorized), (Self.admin, .publicAction("lobby"), .allow),
            ("not-a-token", .read("user-42-inbox"), .unauthorized), ("not-a-token", .list, .unauthorized),
        ]
        for (token, access, expected) in cases {
            let decision = await auth.authorize(access, headers: token.map(bearer) ?? [:], query: [], now: F.now)
            #expect(outcome(decision) == expected, "\(token == nil ? "no token" : String(token!.prefix(12))) \(access): \(decision)")
        }
    }

    /// A family bound to its users (issue 38): only the token whose subject maps to a member's key (or
    /// the admin token) may read, subscribe to or act on it, with or without `--private`, whatever the
    /// token's patterns; other feeds keep their rules.
    @Test(arguments: [true, false])
    func aBoundFamilyMemberIsItsUsersOnly(privateReads: Bool) async throws {
        var policy = AccessPolicy(adminToken: Self.admin, privateReads: privateReads, publicFeeds: ["lobby", "home.bob"], openWrites: true)
        policy.boundFamilies = ["home": .escaped]
        let auth = Authorizer(policy: policy, verifier: try await JWTVerifier(hmacSecret: F.secret))
        let alice = try await F.hs256(F.claims(subscribe: ["*"], publish: ["*"], sub: "alice"))
        let mail = try await F.hs256(F.claims(sub: "bob@example.com"))
        let nobody = try await F.hs256(F.claims(subscribe: ["home.*"], publish: ["home.*"]))
        let cases: [(String?, Access, Outcome)] = [
            (alice, .read("home.alice"), .allow), (alice, .subscribe("home.alice"), .allow), (alice, .write("home.alice"), .allow),
            (alice, .publicAction("home.alice"), .allow),
            (alice, .read("home.bob"), .forbidden), (alice, .subscribe("home.bob"), .forbidden), (alice, .write("home.bob"), .forbidden),
            (mail, .read("home.bob_40example.com"), .allow), (mail, .write("home.bob_40example.com"), .allow), (mail, .read("home.bob"), .forbidden),
            (nobody, .read("home.alice"), .forbidden), (nobody, .write("home.alice"), .forbidden),
            (nil, .read("home.alice"), .unauthorized), (nil, .subscribe("home.bob"), .unauthorized), (nil, .publicAction("home.alice"), .unauthorized),
            (Self.admin, .read("home.bob"), .allow), (Self.admin, .write("home.alice"), .allow),
            (alice, .read("homework"), .allow), (nil, .read("lobby"), .allow),
        ]
        for (token, access, expected) in cases {
            let headers: HTTPHeaders = token.map(bearer) ?? [:]
            let decision = await auth.authorize(access, headers: headers, query: [], now: F.now)
            #expect(outcome(decision) == expected, "\(token == nil ? "no token" : token == Self.admin ? "admin" : "token") \(access)")
        }
        #expect(auth.mayRead("home.alice", as: .token(TokenRights(subject: "alice"))))
        #expect(!auth.mayRead("home.alice", as: .token(TokenRights(subscribe: [FeedPattern("*")]))))
        let many = await auth.authorizeSubscriptions(to: ["home.alice", "home.bob", "lobby"], headers: bearer(alice), query: [], now: F.now)
        #expect(try many.get().decisions.map(outcome) == [.allow, .forbidden, .allow])
    }

    @Test func withoutPrivateReadsEveryReadIsOpenAndAnInvalidTokenIsIgnoredThere() async throws {
        let auth = try await authorizer(privateReads: false)
        for access in [Access.list, .read("x"), .subscribe("x")] {
            #expect(await auth.authorize(access, headers: bearer("garbage"), query: [], now: F.now) == .allow(.anonymous))
        }
        #expect(outcome(await auth.authorize(.write("x"), headers: [:], query: [], now: F.now)) == .unauthorized)
    }

    @Test func listingFiltersToReadableFeeds() async throws {
        let auth = try await authorizer()
        let rights = TokenRights(subscribe: [FeedPattern("a-*")])
        #expect(["a-1", "b-1", "lobby", "a-"].filter { auth.mayRead($0, as: .token(rights)) } == ["a-1", "lobby", "a-"])
        #expect(["a-1", "lobby"].filter { auth.mayRead($0, as: .anonymous) } == ["lobby"])
        #expect(["a-1", "lobby"].filter { auth.mayRead($0, as: .admin) } == ["a-1", "lobby"])
    }

    @Test func writesWithoutACredentialAreOpenOnLoopbackAndRefusedWithAHintElsewhere() async throws {
        let loopback = try await authorizer(privateReads: false, openWrites: true, jwt: false, admin: nil)
        #expect(await loopback.authorize(.write("x"), headers: [:], query: [], now: F.now) == .allow(.anonymous))
        let exposed = try await authorizer(privateReads: false, openWrites: false, jwt: false, admin: nil)
        #expect(await exposed.authorize(.write("x"), headers: [:], query: [], now: F.now) == .forbidden(Authorizer.closedWritesHint))
        #expect(Authorizer.closedWritesHint.contains("--token") && Authorizer.closedWritesHint.contains("--open-writes"))
        #expect(await exposed.authorize(.publicAction("blackjack"), headers: [:], query: [], now: F.now) == .allow(.anonymous))
        #expect(await exposed.authorize(.read("x"), headers: [:], query: [], now: F.now) == .allow(.anonymous))
    }

    @Test func theTokenIsTakenFromHeaderThenCookieThenTheQueryOfEventStreamsOnly() async throws {
        let auth = try await authorizer()
        let good = try await F.hs256(F.claims(subscribe: ["x"]))
        let cookie: HTTPHeaders = ["Cookie": "theme=dark; diffstreamAuthorization=\(good); other=1"]
        #expect(outcome(await auth.authorize(.read("x"), headers: cookie, query: [], now: F.now)) == .allow)
        // The header wins over the cookie.
        var both = cookie
        both.add("Authorization", "Bearer garbage")
        #expect(outcome(await auth.authorize(.read("x"), headers: both, query: [], now: F.now)) == .unauthorized)
        // An empty cookie counts as no token.
        #expect(await auth.authorize(.read("x"), headers: ["Cookie": "diffstreamAuthorization="], query: [], now: F.now)
                == .unauthorized("this feed is private: send a token ('Authorization: Bearer <token>' or the diffstreamAuthorization cookie)"))
        // The query parameter counts for event streams only.
        #expect(outcome(await auth.authorize(.subscribe("x"), headers: [:], query: [("authorization", good)], now: F.now)) == .allow)
        #expect(outcome(await auth.authorize(.read("x"), headers: [:], query: [("authorization", good)], now: F.now)) == .unauthorized)
        #expect(outcome(await auth.authorize(.write("x"), headers: [:], query: [("authorization", good)], now: F.now)) == .unauthorized)
    }

    @Test func refusalsSayWhyWithoutRepeatingTheToken() async throws {
        let auth = try await authorizer()
        let expired = try await F.hs256(F.claims(subscribe: ["x"], exp: F.now - 3600))
        let forged = try await F.hs256(F.claims(subscribe: ["x"]), secret: F.otherSecret)
        let reasons: [(HTTPHeaders, String)] = [
            (bearer(expired), "expired"), (bearer(forged), "bad signature"), (bearer("abc.def"), "malformed"),
            (["Authorization": "Basic \(Self.admin)"], "Bearer <token>"),
        ]
        for (headers, reason) in reasons {
            guard case .unauthorized(let detail, let invalidToken) = await auth.authorize(.read("x"), headers: headers, query: [], now: F.now) else {
                Issue.record("\(reason): not a 401"); continue
            }
            #expect(invalidToken)
            #expect(detail.contains(reason), "\(detail)")
            #expect(!detail.contains(headers["Authorization"]!.dropFirst(7)), "\(detail)")
        }
    }

    @Test func theAdminTokenIsComparedExactly() async throws {
        let auth = try await authorizer(jwt: false)
        for wrong in [Self.admin + "x", String(Self.admin.dropLast()), Self.admin.uppercased(), ""] {
            #expect(outcome(await auth.authorize(.write("x"), headers: bearer(wrong), query: [], now: F.now)) == .unauthorized, "\(wrong)")
        }
        #expect(await auth.authorize(.write("x"), headers: bearer(Self.admin), query: [], now: F.now) == .allow(.admin))
    }
}

/// Writes whose only credential is the cookie (issue 24): only from the server's own origin, a
/// `--public-origin` or an `--allow-origin`; Bearer writes and cookie reads are not affected.
struct CookieWriteOriginTests {
    typealias F = TokenFixtures
    enum Credential { case cookie, bearer }

    @Test(arguments: [
        // (credential, access, headers besides the credential, trusted origins, tls, allowed)
        (Credential.cookie, Access.write("inbox"), ["Origin": "http://app.example:8080"], [String](), false, true),
        (.cookie, .write("inbox"), ["Origin": "https://app.example:8080"], [], true, true),
        (.cookie, .write("inbox"), ["Origin": "http://app.example:8080"], [], true, false),   // http origin, https server
        (.cookie, .write("inbox"), ["Origin": "https://evil.example"], [], false, false),
        (.cookie, .write("inbox"), ["Origin": "http://sibling.app.example:8080"], [], false, false),
        (.cookie, .write("inbox"), ["Origin": "null"], [], false, false),
        (.cookie, .write("inbox"), [:], [], false, false),
        (.cookie, .write("inbox"), ["Sec-Fetch-Site": "same-origin"], [], false, true),
        (.cookie, .write("inbox"), ["Sec-Fetch-Site": "same-site"], [], false, false),
        (.cookie, .write("inbox"), ["Origin": "https://public.example"], ["https://public.example"], false, true),
        (.cookie, .write("inbox"), ["Origin": "https://evil.example"], ["*"], false, false),  // * never counts
        (.cookie, .publicAction("inbox"), ["Origin": "https://evil.example"], [], false, false),
        (.cookie, .subscribe("inbox"), ["Origin": "https://evil.example"], [], false, true),   // reads keep the cookie
        (.cookie, .read("inbox"), [:], [], false, true),
        (.bearer, .write("inbox"), ["Origin": "https://evil.example"], [], false, true),
        (.bearer, .write("inbox"), [:], [], false, true),
    ] as [(Credential, Access, [String: String], [String], Bool, Bool)])
    func aCookieWriteIsTakenOnlyFromATrustedOrigin(credential: Credential, access: Access, extra: [String: String], trusted: [String], tls: Bool, allowed: Bool) async throws {
        let auth = Authorizer(policy: AccessPolicy(privateReads: true, trustedOrigins: Set(trusted), tls: tls),
                              verifier: try await JWTVerifier(hmacSecret: F.secret))
        let token = try await F.hs256(F.claims(subscribe: ["inbox"], publish: ["inbox"]))
        var headers: HTTPHeaders = ["Host": "app.example:8080"]
        switch credential {
        case .cookie: headers.set("Cookie", "other=1; \(Authorizer.cookieName)=\(token)")
        case .bearer: headers.set("Authorization", "Bearer \(token)")
        }
        for (name, value) in extra { headers.set(name, value) }
        let decision = await auth.authorize(access, headers: headers, query: [], now: F.now)
        if allowed {
            guard case .allow(.token) = decision else { Issue.record("\(decision)"); return }
        } else {
            guard case .forbidden(let detail) = decision else { Issue.record("\(decision)"); return }
            #expect(detail.contains(Authorizer.cookieName) && detail.contains("Bearer"))
        }
    }
}
