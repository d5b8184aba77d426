import CoreMetrics
import DiffStreamJSON
import FeedCore
import HTTPCore
import Presence

/// Who is here (issue 55, docs/protocol.md "Who is here"): which feeds have presence, the presence
/// feeds' routes, and the connections event streams add to a feed's presence.
extension FeedAPI {
    /// Which feeds have a presence feed, and which show who is present (`--presence`, `--presence-names`).
    public struct PresencePolicy: Sendable {
        /// Feeds with presence.
        public var feeds: [FeedPattern]
        /// Feeds whose presence shows identities (a token's `sub` and `name`); they have presence too.
        public var identities: [FeedPattern]

        public init(feeds: [FeedPattern] = [], identities: [FeedPattern] = []) {
            self.feeds = feeds
            self.identities = identities
        }

        /// Whether `feed` has presence, and whether it shows identities.
        /// - Complexity: O(patterns).
        public func settings(of feed: String) -> (on: Bool, identities: Bool)? {
            if identities.anyMatches(feed) { return (true, true) }
            return feeds.anyMatches(feed) ? (true, false) : nil
        }
    }

    /// The header that names a feed's presence feed, on its event stream and its document.
    package static let presenceHeader = "DiffStream-Presence"

    /// The query parameters a stream that includes a feed with presence may carry.
    package enum PresenceParameter {
        /// The id an anonymous client keeps across its reopens (16 to 64 of `A-Z a-z 0-9 _ -`).
        static let id = "presence-id"
        /// The connection's metadata: a JSON object of at most ``PresenceConnection/maxMetaBytes``.
        static let meta = "presence-meta"
        /// `presence=hidden`: the connection makes no one present.
        static let mode = "presence"
    }

    /// Whether presence is on for `feed`, and with identities: by the server's flags or the hosted
    /// view model's (or family's) own setting. Nil: no presence (or no ``PresenceFeeds``).
    func presenceSettings(of feed: String) -> (on: Bool, identities: Bool)? {
        guard presence != nil, !PresenceFeedName.isReserved(feed) else { return nil }
        let flagged = options.presence.settings(of: feed)
        switch hosted?.hosted(feed)?.presence {
        case .identities?: return (true, true)
        case .anonymous?: return flagged ?? (true, false)
        case .off?, nil: return flagged
        }
    }

    /// The presence feed's name of `feed`, when it has one (for `GET /feeds` and the stream's header).
    func presenceName(of feed: String) -> String? {
        guard let presence, presenceSettings(of: feed) != nil else { return nil }
        return presence.name(of: feed)
    }

    /// What a stream of `request` adds to the presence of the feeds it includes: its user (the
    /// principal's subject and name, else an anonymous one, carried by `presence-id`), its metadata and
    /// whether it is hidden. A token presented on a stream that needed none is verified here, so that its
    /// subject is known (one that does not verify leaves the stream anonymous).
    /// - Throws: `400` for a malformed `presence-id` or `presence-meta`.
    nonisolated(nonsending) func presenceConnection(_ request: HTTPRequest, principal: Principal) async throws(APIError) -> PresenceConnection {
        var principal = principal
        if principal == .anonymous, case .success(let presented?) = Authorizer.presentedToken(headers: request.headers, query: request.query, isEventStream: true),
           let verifier = authorizer.verifier, case .success(let rights) = await verifier.verify(presented.token, now: options.now()) {
            principal = .token(rights)
        }
        let user: PresenceUser
        if case .token(let rights) = principal, let subject = rights.subject {
            user = .identified(subject: subject, name: rights.name)
        } else if let carried = request.queryValue(PresenceParameter.id) {
            guard Self.isCarriedID(carried) else {
                throw APIError(.badRequest, "bad presence-id", "presence-id must be 16 to 64 of A-Z a-z 0-9 _ - (an id the client draws once and keeps across reopens)")
            }
            user = .anonymous(carried: carried)
        } else {
            user = .anonymous(carried: nil)
        }
        var meta: JSONModel?
        if let text = request.queryValue(PresenceParameter.meta) {
            guard let model = try? JSONModel(parsing: text), case .object = model.value, model.bytes.count <= PresenceConnection.maxMetaBytes else {
                throw APIError(.badRequest, "bad presence-meta", "presence-meta must be a JSON object of at most \(PresenceConnection.maxMetaBytes) bytes")
            }
            meta = model
        }
        return PresenceConnection(user: user, meta: meta, hidden: request.queryValue(PresenceParameter.mode) == "hidden")
    }

    /// Whether `text` can be an anonymous client's carried id: 16 to 64 of `A-Z a-z 0-9 _ -`.
    static func isCarriedID(_ text: String) -> Bool {
        (16...64).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
    }

    /// Who is present on `feed`, for a program (a hosted view model's source): what its presence feed
    /// shows now, then each change; nil when `feed` has no presence (or none now: past
    /// `--max-presence-feeds`). Reading makes no one present.
    public func presenceSnapshots(of feed: String) async -> AsyncStream<PresenceSnapshot>? {
        guard let presence, let settings = presenceSettings(of: feed) else { return nil }
        return await presence.snapshots(of: feed, identities: settings.identities)
    }

    /// Adds `sink`, a stream (or a multi-feed stream's slot) of `feed`, to `feed`'s presence until it ends.
    func joinPresence(_ feed: String, _ connection: PresenceConnection, until sink: any EventSink) async {
        guard let presence, let settings = presenceSettings(of: feed) else { return }
        // Past --max-presence-feeds, a feed whose presence is not held gets none: the stream counts nowhere.
        guard let number = await presence.open(feed, identities: settings.identities, connection) else {
            Self.countPresenceRefusal()
            return
        }
        sink.onTermination { Task { await presence.close(feed, connection: number) } }
    }

    /// The feed whose presence feed `name` is, when presence is on for it.
    func presenceTarget(of name: String) -> (feed: String, identities: Bool)? {
        guard let target = presence?.target(of: name), let settings = presenceSettings(of: target) else { return nil }
        return (target, settings.identities)
    }

    /// Counts one refusal at `--max-presence-feeds` (`diffstream_presence_refusals_total`; rare: the
    /// counter is looked up each time).
    static func countPresenceRefusal() {
        CoreMetrics.Counter(label: HTTPMetricName.presenceRefusals).increment()
    }

    /// Counts one refusal at `--max-presence-feeds` and says why `name`, a presence feed, is not there now.
    func presenceRefusal(_ name: String) -> String {
        Self.countPresenceRefusal()
        return "no presence feed '\(name)' now: this instance holds the most presence feeds it keeps (--max-presence-feeds \(presence?.maxFeeds ?? 0)); it is made once one of them is dropped (when no one is present on its feed or watching it)"
    }

    /// `503` for a presence feed past `--max-presence-feeds`, naming the limit, with `Retry-After` (counted).
    func presenceFull(_ name: String) -> APIError {
        var error = APIError(.serviceUnavailable, "presence feeds full", presenceRefusal(name))
        error.limit = (name: "max-presence-feeds", value: presence?.maxFeeds ?? 0)
        error.retryAfter = 5
        return error
    }

    /// A request on a reserved name (`_presence.F`): its document and its event stream, with `F`'s
    /// rights; nothing else (it is read-only, and has no actions).
    nonisolated(nonsending) func routePresence(_ request: HTTPRequest, pattern: RoutePattern, name: String) async throws(APIError) -> HTTPResponse {
        guard let presence, let (target, identities) = presenceTarget(of: name) else {
            throw APIError(.notFound, "not found", "no feed named '\(name)': names starting with '\(PresenceFeedName.prefix)' or '\(PresenceFeedName.hashedPrefix)' are presence feeds, and the feed they stand for has no presence")
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        switch (pattern, method) {
        case (Self.feedPattern, "GET"):
            try await authorize(.read(target), request)
            guard let feed = await presence.read(target, identities: identities) else { throw presenceFull(name) }
            return Self.document(await feed.readDocument(), ifNoneMatch: request.headers["If-None-Match"],
                                 acceptsGzip: options.compression && Gzip.isAccepted(by: request.headers["Accept-Encoding"]))
        case (Self.feedPattern, _):
            try await authorize(.read(target), request)
            throw MethodNotAllowed(allowed: ["GET", "HEAD"], method: request.method).error
        case (RoutePattern("/feeds/{feed}/events"), "GET"):
            let principal = try await authorize(.subscribe(target), request)
            guard await presence.hasRoom(for: target) else { throw presenceFull(name) }
            let expires: Double? = if case .token(let rights) = principal { rights.expires } else { nil }
            let now = options.now
            let lastEventID = request.headers["Last-Event-ID"] ?? request.queryValue("lastEventId")
            return HTTPResponse(status: .ok, headers: [
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]) { [announcement] stream in
                stream.send(announcement)
                Task {
                    // Following presence makes no one present; it keeps the presence feed until it ends.
                    guard let feed = await presence.watch(target, identities: identities) else {
                        // The last room went to another feed since the check above.
                        stream.end(with: EventPayload(FeedEvents.refusalEvent("notfound", feed: name, error: "not found", detail: presenceRefusal(name))))
                        return
                    }
                    stream.onTermination { Task { await presence.unwatch(target) } }
                    await feed.subscribe(stream, lastEventID: lastEventID)
                    if let expires { Self.endAtExpiry(stream, feed: name, expires: expires, now: now) }
                }
            }
        default:
            try await authorize(.read(target), request)
            throw APIError(.notFound, "not found", "'\(name)' is a presence feed: it has only GET /feeds/\(name) and its events")
        }
    }
}
