import FeedCore
import ViewModelHosting
import HTTPCore
import Foundation

/// Who a request acts as, once its credential has been checked.
public enum Principal: Sendable, Equatable {
    /// No credential (or none was needed).
    case anonymous
    /// The plain `--token`: may do anything.
    case admin
    /// A valid signed token with its rights.
    case token(TokenRights)
}

/// What a request wants to do, and to which feed.
public enum Access: Sendable, Equatable {
    /// `GET /feeds`.
    case list
    /// `GET /feeds/{feed}`.
    case read(String)
    /// `GET /feeds/{feed}/events`.
    case subscribe(String)
    /// `PUT`, `DELETE` or `PATCH` of a feed, or an action that is not public.
    case write(String)
    /// An action its view model declares public: without any write credential configured, anyone may
    /// take it, even on a public address (issue 15); once a credential is configured, it is a write
    /// like any other (issue 13: an action needs a token whose `publish` patterns match).
    case publicAction(String)
}

/// The answer of ``Authorizer/authorize(_:headers:query:now:)``.
public enum AuthorizationDecision: Sendable, Equatable {
    case allow(Principal)
    /// `401` with `WWW-Authenticate: Bearer`; the detail says why (never repeating the token).
    /// `invalidToken`: a token was presented and refused (RFC 6750 §3.1 `error="invalid_token"`).
    case unauthorized(String, invalidToken: Bool = false)
    /// `403`, whether or not the feed exists; the detail says what is missing.
    case forbidden(String)
}

/// Who may read and write which feed (issue 13), and whether writes are open at all (issue 15).
public struct AccessPolicy: Sendable {
    /// The plain admin token (`--token`).
    public var adminToken: String?
    /// `--private`: reads need a token whose `subscribe` patterns match, except for ``publicFeeds``.
    public var privateReads: Bool
    /// `--public-feeds`: feeds anyone may read under `--private`.
    public var publicFeeds: Set<String>
    /// When no write credential is configured (no admin token, no JWT key): whether anyone may write.
    /// True on loopback and with `--open-writes`; false on a public address.
    public var openWrites: Bool
    /// Origins besides the server's own from which a write may carry only the cookie: `--public-origin`
    /// (the origin users reach the server at, behind a TLS proxy) and the `--allow-origin` values
    /// (never `*`). Each is `scheme://host[:port]`.
    public var trustedOrigins: Set<String>
    /// Whether the server itself serves HTTPS: its own origin is `https://` + `Host` then.
    public var tls: Bool
    /// Families whose members are bound to their users (issue 38), by prefix, with how a token's
    /// subject becomes a key: the member `PREFIX.KEY` may be read, subscribed to, patched or acted on
    /// only with the admin token or a token whose `sub` maps to `KEY`, whatever `--private`, the
    /// public feeds or the token's patterns say. Anything else is `403` (`401` without a token),
    /// whether or not the member exists.
    public var boundFamilies: [String: SubjectKey]

    public init(adminToken: String? = nil, privateReads: Bool = false, publicFeeds: Set<String> = [], openWrites: Bool = true,
                trustedOrigins: Set<String> = [], tls: Bool = false, boundFamilies: [String: SubjectKey] = [:]) {
        self.adminToken = adminToken
        self.privateReads = privateReads
        self.publicFeeds = publicFeeds
        self.openWrites = openWrites
        self.trustedOrigins = trustedOrigins.subtracting(["*"])
        self.tls = tls
        self.boundFamilies = boundFamilies
    }
}

/// Decides, without any I/O but token verification, whether a request may do what it asks.
///
/// A token is read from, in order (issue 13): `Authorization: Bearer` (RFC 6750 §2.1); the cookie
/// `diffstreamAuthorization`; and, for event streams only, the query parameter `authorization`
/// (RFC 6750 §2.3; `EventSource` cannot set headers). It is the admin token if it equals `--token`
/// (compared in constant time), else it must be a valid signed token.
public struct Authorizer: Sendable {
    public static let cookieName = "diffstreamAuthorization"
    public static let queryName = "authorization"

    public let policy: AccessPolicy
    public let verifier: (any TokenVerifying)?

    public init(policy: AccessPolicy, verifier: (any TokenVerifying)? = nil) {
        self.policy = policy
        self.verifier = verifier
    }

    /// Whether a credential can be configured for writes at all (an admin token or a JWT key).
    public var hasWriteCredential: Bool { policy.adminToken != nil || verifier != nil }

    private enum Need: Equatable {
        case nothing, optional, subscribe(String), publish(String)
        /// A member of a bound family: its user's token (``AccessPolicy/boundFamilies``).
        case owner(feed: String, family: String, key: String)
    }

    /// Whether reading `feed` needs a token: a bound family's member, or any feed under `--private`
    /// but those of `--public-feeds`. Only a feed that needs none is public, and its log reads may be
    /// kept by shared caches (``LogCaching``).
    public func needsToken(_ feed: String) -> Bool {
        binding(of: feed) != nil || policy.privateReads && !policy.publicFeeds.contains(feed)
    }

    /// The bound family `feed` is a member of, and its key (nil: not a bound family's member).
    /// - Complexity: O(n) in the name's length (a lookup per dot).
    package func binding(of feed: String) -> (family: String, key: Substring, mapping: SubjectKey)? {
        guard !policy.boundFamilies.isEmpty else { return nil }
        var index = feed.startIndex
        while let dot = feed[index...].firstIndex(of: ".") {
            let family = String(feed[..<dot])
            if let mapping = policy.boundFamilies[family] { return (family, feed[feed.index(after: dot)...], mapping) }
            index = feed.index(after: dot)
        }
        return nil
    }

    /// Whether `principal` is the user a bound family's member `feed` belongs to (or the admin).
    func owns(_ feed: String, family: String, key: Substring, mapping: SubjectKey, as principal: Principal) -> Bool {
        switch principal {
        case .admin: return true
        case .token(let rights): return rights.subject.flatMap { mapping.key(for: $0, prefix: family) }.map { $0[...] == key } ?? false
        case .anonymous: return false
        }
    }

    static func notOwner(_ feed: String, family: String) -> String {
        "only its user may use '\(feed)': the family '\(family)' is bound to its users, and this token's subject (sub) is not its key"
    }

    /// Decides one request. `now` is seconds since 1970.
    nonisolated(nonsending) public func authorize(_ access: Access, headers: HTTPHeaders, query: [(name: String, value: String)], now: Double) async -> AuthorizationDecision {
        var need: Need
        switch access {
        case .list:
            need = policy.privateReads ? .optional : .nothing
        case .read(let feed), .subscribe(let feed):
            need = policy.privateReads && !policy.publicFeeds.contains(feed) ? .subscribe(feed) : .nothing
        case .publicAction(let feed):
            guard hasWriteCredential else { return .allow(.anonymous) }
            need = .publish(feed)
        case .write(let feed):
            guard hasWriteCredential else {
                if policy.openWrites { return .allow(.anonymous) }
                return .forbidden(Self.closedWritesHint)
            }
            need = .publish(feed)
        }
        if case .read(let feed) = access, let bound = binding(of: feed) { need = .owner(feed: feed, family: bound.family, key: String(bound.key)) }
        if case .subscribe(let feed) = access, let bound = binding(of: feed) { need = .owner(feed: feed, family: bound.family, key: String(bound.key)) }
        if case .write(let feed) = access, let bound = binding(of: feed) { need = .owner(feed: feed, family: bound.family, key: String(bound.key)) }
        if case .publicAction(let feed) = access, let bound = binding(of: feed) { need = .owner(feed: feed, family: bound.family, key: String(bound.key)) }
        if need == .nothing { return .allow(.anonymous) }

        let isEventStream = if case .subscribe = access { true } else { false }
        let token: String
        switch Self.presentedToken(headers: headers, query: query, isEventStream: isEventStream) {
        case .failure(let failure):
            return .unauthorized(failure.description, invalidToken: true)
        case .success(nil):
            if need == .optional { return .allow(.anonymous) }
            if case .publish = need { return .unauthorized("writes need a token: send 'Authorization: Bearer <token>'") }
            if case .owner(let feed, let family, _) = need {
                return .unauthorized("'\(feed)' belongs to one user (the family '\(family)' is bound to its users): send that user's token ('Authorization: Bearer <token>' or the \(Self.cookieName) cookie)")
            }
            return .unauthorized("this feed is private: send a token ('Authorization: Bearer <token>' or the \(Self.cookieName) cookie)")
        case .success(let presented?):
            token = presented.token
            if presented.fromCookie, let refusal = crossSiteRefusal(headers) {
                if case .publish = need { return .forbidden(refusal) }
                if case .owner = need, !Self.isRead(access) { return .forbidden(refusal) }
            }
        }

        let principal: Principal
        if let admin = policy.adminToken, ConstantTime.equal(Array(token.utf8), Array(admin.utf8)) {
            principal = .admin
        } else if let verifier {
            switch await verifier.verify(token, now: now) {
            case .success(let rights): principal = .token(rights)
            case .failure(let failure): return .unauthorized(failure.description, invalidToken: true)
            }
        } else {
            return .unauthorized("the bearer token is not valid", invalidToken: true)
        }

        switch need {
        case .subscribe(let feed):
            return mayRead(feed, as: principal) ? .allow(principal) : .forbidden("this token may not read '\(feed)' (its subscribe patterns do not match)")
        case .publish(let feed):
            return mayWrite(feed, as: principal) ? .allow(principal) : .forbidden("this token may not write '\(feed)' (its publish patterns do not match)")
        case .owner(let feed, let family, let key):
            guard let mapping = policy.boundFamilies[family] else { return .forbidden(Self.notOwner(feed, family: family)) }
            return owns(feed, family: family, key: key[...], mapping: mapping, as: principal) ? .allow(principal) : .forbidden(Self.notOwner(feed, family: family))
        case .optional, .nothing:
            return .allow(principal)
        }
    }

    private static func isRead(_ access: Access) -> Bool {
        switch access {
        case .list, .read, .subscribe: true
        case .write, .publicAction: false
        }
    }

    /// Decides a multi-feed subscription (`GET /events`) with one check of the token: each feed is
    /// allowed, refused as `.forbidden`, or `.unauthorized` when it needs a token and none was sent.
    /// The whole request is refused (the `.unauthorized` returned as a failure) when a token is needed
    /// by some feed and the one presented is not valid, as on the single-feed route.
    /// - Complexity: one token verification, then O(feeds × patterns).
    public func authorizeSubscriptions(to feeds: [String], headers: HTTPHeaders, query: [(name: String, value: String)], now: Double) async
        -> Result<(principal: Principal, decisions: [AuthorizationDecision]), InvalidToken> {
        let needsToken = { (feed: String) in self.needsToken(feed) }
        guard feeds.contains(where: needsToken) else { return .success((.anonymous, feeds.map { _ in .allow(.anonymous) })) }
        let principal: Principal
        switch Self.presentedToken(headers: headers, query: query, isEventStream: true) {
        case .failure(let failure):
            return .failure(InvalidToken(detail: failure.description))
        case .success(nil):
            return .success((.anonymous, feeds.map { feed in
                needsToken(feed) ? .unauthorized("this feed is private: send a token ('Authorization: Bearer <token>', the \(Self.cookieName) cookie or ?\(Self.queryName)=)") : .allow(.anonymous)
            }))
        case .success(let presented?):
            if let admin = policy.adminToken, ConstantTime.equal(Array(presented.token.utf8), Array(admin.utf8)) {
                principal = .admin
            } else if let verifier {
                switch await verifier.verify(presented.token, now: now) {
                case .success(let rights): principal = .token(rights)
                case .failure(let failure): return .failure(InvalidToken(detail: failure.description))
                }
            } else {
                return .failure(InvalidToken(detail: "the bearer token is not valid"))
            }
        }
        return .success((principal, feeds.map { feed in
            if let bound = binding(of: feed), !mayRead(feed, as: principal) { return .forbidden(Self.notOwner(feed, family: bound.family)) }
            return mayRead(feed, as: principal) ? .allow(principal) : .forbidden("this token may not read '\(feed)' (its subscribe patterns do not match)")
        }))
    }

    /// A token presented and refused (malformed, bad signature, expired, wrong algorithm).
    public struct InvalidToken: Error, Sendable, Equatable {
        public var detail: String
    }

    /// Whether `principal` may read `feed` (used to filter `GET /feeds`).
    public func mayRead(_ feed: String, as principal: Principal) -> Bool {
        if let bound = binding(of: feed) { return owns(feed, family: bound.family, key: bound.key, mapping: bound.mapping, as: principal) }
        if !policy.privateReads || policy.publicFeeds.contains(feed) { return true }
        switch principal {
        case .admin: return true
        case .token(let rights): return rights.subscribe.anyMatches(feed)
        case .anonymous: return false
        }
    }

    /// Whether `GET /feeds` shows `principal` the family `prefix` (its entry, not a member): when it may
    /// read some member. Bound to its users: the admin, or a token with a subject. Otherwise: reads are
    /// open, or the admin, or a token with a `subscribe` pattern that can match a member (`*`, `home.*`,
    /// `home.alice`).
    public func mayList(family prefix: String, as principal: Principal) -> Bool {
        if policy.boundFamilies[prefix] != nil {
            switch principal {
            case .admin: return true
            case .token(let rights): return rights.subject != nil
            case .anonymous: return false
            }
        }
        if !policy.privateReads { return true }
        switch principal {
        case .admin: return true
        case .token(let rights): return rights.subscribe.contains { $0.text.hasPrefix(prefix + ".") || $0.text.hasPrefix("*") || $0.matches(prefix + ".*") }
        case .anonymous: return false
        }
    }

    package func mayWrite(_ feed: String, as principal: Principal) -> Bool {
        if let bound = binding(of: feed) { return owns(feed, family: bound.family, key: bound.key, mapping: bound.mapping, as: principal) }
        switch principal {
        case .admin: return true
        case .token(let rights): return rights.publish.anyMatches(feed)
        case .anonymous: return !hasWriteCredential && policy.openWrites
        }
    }

    /// The detail of the `403` for writes on a public address without a write credential.
    public static let closedWritesHint = "writes are refused: this server listens on a public address without a write credential; start it with --token (or --jwt-secret-file) and send 'Authorization: Bearer <token>', or with --open-writes to let anyone write"

    /// Why a write whose only credential is the cookie may not be taken, or nil when it comes from the
    /// server's own origin or a trusted one. A browser sends the cookie with a request from any site,
    /// and `SameSite=Strict` does not stop a sibling subdomain, so the request's `Origin` (RFC 6454 §7,
    /// sent by browsers with every non-GET request) must be one of ours; without it, the fetch
    /// metadata `Sec-Fetch-Site: same-origin` (W3C Fetch Metadata §2.1) is needed.
    package func crossSiteRefusal(_ headers: HTTPHeaders) -> String? {
        guard let origin = headers["Origin"] else {
            if headers["Sec-Fetch-Site"] == "same-origin" { return nil }
            return "a write with only the \(Self.cookieName) cookie needs an Origin header (or Sec-Fetch-Site: same-origin) from this server's own origin; send 'Authorization: Bearer <token>' instead"
        }
        let own = headers["Host"].map { (policy.tls ? "https://" : "http://") + $0.lowercased() }
        let normalized = origin.lowercased()
        if normalized == own || policy.trustedOrigins.contains(where: { $0.lowercased() == normalized }) { return nil }
        return "a write with only the \(Self.cookieName) cookie is refused from the origin '\(origin.prefix(200))': it is not this server's own origin\(own.map { " (\($0))" } ?? "") nor one given by --public-origin or --allow-origin; send 'Authorization: Bearer <token>' instead"
    }

    /// The token a request presents, and whether it came in the cookie: nil if none, a failure if the
    /// `Authorization` header is unusable.
    package static func presentedToken(headers: HTTPHeaders, query: [(name: String, value: String)], isEventStream: Bool) -> Result<(token: String, fromCookie: Bool)?, TokenFailure> {
        if let authorization = headers["Authorization"] {
            // RFC 6750 §2.1: the scheme is case-insensitive; the token follows one space.
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
                return .failure(.malformed("the Authorization header must be 'Bearer <token>'"))
            }
            return .success((String(parts[1]), false))
        }
        for header in headers.values("Cookie") {
            for pair in header.split(separator: ";") {
                let cookie = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard cookie.count == 2, cookie[0].trimmingCharacters(in: " ") == cookieName else { continue }
                let raw = cookie[1].trimmingCharacters(in: " \"")
                let value = PercentDecoding.decode(raw) ?? raw  // the page sets it with encodeURIComponent
                if !value.isEmpty { return .success((value, true)) }
            }
        }
        if isEventStream, let value = query.first(where: { $0.name == queryName })?.value, !value.isEmpty {
            return .success((value, false))
        }
        return .success(nil)
    }

    /// Seconds since 1970, from the real-time clock.
    public static func wallClock() -> Double {
        WallClock.now()
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var slice = self
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
