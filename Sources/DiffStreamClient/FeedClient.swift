import DiffStream
import DiffStreamJSON
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client of a DiffStream server: follows feeds as sequences of updates (resuming, gap-free) and
/// performs actions of hosted view models.
///
/// ```swift
/// let client = FeedClient(baseURL: URL(string: "https://example.com")!, token: token)
/// for try await event in client.snapshots(of: "home", as: Snapshot<HomeSection, HomeItem>.self) {
///     if case .update(let update) = event { apply(update) }
/// }
/// ```
///
/// One feed follows `GET /feeds/{feed}/events`; several follow one `GET /events?feed=…` stream.
/// See docs/client-swift.md for the guarantees.
public struct FeedClient: Sendable {
    /// Asked for a fresh token after a `401`/`403` or an expired token; `nil` stops following the
    /// feeds concerned. A fresh token is used after the refusal's backoff (see docs/client-swift.md,
    /// "Tokens"), so a hook that answers at once with a token the server refuses does not loop.
    public typealias TokenHook = @Sendable (FeedProblem) async -> String?

    /// The server's base URL (`https://example.com`, or with a path prefix).
    public let baseURL: URL
    /// The token sent as `Authorization: Bearer`, if any.
    public let token: String?
    /// Called for a fresh token (see ``TokenHook``).
    public var tokenHook: TokenHook?
    /// The offline cache, if any: the last snapshot and id per feed, yielded (stale) at start. Keyed by
    /// the subject of ``token``; updates after the token hook gave a token of another subject are saved
    /// under that subject.
    public var cache: OfflineCache?
    /// The session configuration connections are made with.
    public var sessionConfiguration: URLSessionConfiguration
    /// Accept any server certificate (Apple platforms only; tests against self-signed servers).
    public var insecure = false
    /// The transport of the event streams; `nil` (the default) is `URLSession` with ``sessionConfiguration``
    /// and ``insecure``. Actions always go through `URLSession`.
    public var streamTransport: (any FeedStreamTransport)?
    /// Silence, in heartbeat intervals, after which a stream is taken as dead.
    public var stallFactor: Double = 2.5
    /// The heartbeat interval assumed until the server announces one (`: heartbeat N`), in seconds:
    /// the server's default `--heartbeat`.
    public var assumedHeartbeat: Double = 15
    /// The longest wait between reconnections, in seconds (before jitter).
    public var maximumBackoff: Double = 30
    /// A feed reported ``FeedEvent/unavailable(feed:detail:)`` when its stream ended: how long a new
    /// stream has to say `unavailable` again before the client takes the outage as over and yields
    /// ``FeedEvent/available(feed:)``, in seconds. The server says it right after the feed's first
    /// events, so this only needs to cover the time to read them. The same wait confirms a cached
    /// snapshot the new stream resumed at its id with nothing missed: it is then yielded again, not
    /// stale (`.full(.resync)`).
    public var outageGrace: Double = 2
    /// The most feeds one `GET /events` stream lists: set it to the server's `--max-stream-feeds` (100
    /// by default). Following more feeds in one call opens one stream per this many, merged into one
    /// sequence; each stream reconnects, and asks ``tokenHook`` for a fresh token, on its own, and its
    /// ``FeedEvent/connection(_:)`` states come interleaved with the others'.
    public var maxStreamFeeds = 100
    /// How feeds are followed: the event stream (the default), or each feed's cacheable log, for servers
    /// behind an HTTP cache or a CDN (docs/client-swift.md, "Behind a CDN").
    public var delivery: FeedDelivery = .eventStream

    /// - Parameters:
    ///   - baseURL: the server, e.g. `http://127.0.0.1:8080`.
    ///   - token: a bearer token (a signed JWT or the admin token), or `nil`.
    ///   - cacheDirectory: a directory for the offline cache, or `nil` for none.
    ///   - tokenHook: asked for a fresh token when the server refuses the current one.
    public init(baseURL: URL, token: String? = nil, cacheDirectory: URL? = nil, tokenHook: TokenHook? = nil) {
        self.baseURL = baseURL
        self.token = token
        self.tokenHook = tokenHook
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 3600  // the client's own heartbeat check decides when a stream is dead
        configuration.timeoutIntervalForResource = .infinity
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration = configuration
        cache = cacheDirectory.map { OfflineCache(directory: $0, server: baseURL, token: token) }
    }

    // MARK: Following feeds

    /// Follows one feed, decoding its sections and items into the app's types.
    ///
    /// Items decode from `{"id","kind","model"}` (one enum may cover several kinds), sections from
    /// `{"id","model"}` (`model` may be `null`). Elements that do not decode are reported in
    /// ``FeedUpdate/undecodable`` and left out.
    public func snapshots<Section, Item>(of feed: String, as type: Snapshot<Section, Item>.Type = Snapshot<Section, Item>.self)
        -> AsyncThrowingStream<FeedEvent<Section, Item>, any Error>
    where Section: Identifiable & Hashable & Decodable & Sendable, Item: Identifiable & Hashable & Decodable & Sendable, Section.ID: Sendable, Item.ID: Sendable {
        follow(.single(feed), transform: TypedTransform<Section, Item>())
    }

    /// Follows several feeds on one stream (`GET /events?feed=A&feed=B…`), all decoded into the same types.
    /// Each update names its feed.
    public func snapshots<Section, Item>(of feeds: [String], as type: Snapshot<Section, Item>.Type = Snapshot<Section, Item>.self)
        -> AsyncThrowingStream<FeedEvent<Section, Item>, any Error>
    where Section: Identifiable & Hashable & Decodable & Sendable, Item: Identifiable & Hashable & Decodable & Sendable, Section.ID: Sendable, Item.ID: Sendable {
        follow(.multi(feeds), transform: TypedTransform<Section, Item>())
    }

    /// Follows one feed in the wire's form: models as canonical JSON, the server's operations as sent.
    public func updates(of feed: String) -> AsyncThrowingStream<WireFeedEvent, any Error> {
        follow(.single(feed), transform: WireTransform())
    }

    /// Follows several feeds on one stream in the wire's form (each update names its feed): the way to
    /// follow feeds of different types on one connection.
    public func updates(of feeds: [String]) -> AsyncThrowingStream<WireFeedEvent, any Error> {
        follow(.multi(feeds), transform: WireTransform())
    }

    private func follow<Transform: EventTransform>(_ route: StreamMachine.Route, transform: Transform) -> AsyncThrowingStream<Transform.Element, any Error> {
        if delivery == .cacheableLog {
            var seen: Set<String> = []
            let parts = route.feeds.filter { seen.insert($0).inserted }.map { poll($0, transform: transform) }
            return parts.count == 1 ? parts[0] : Self.merge(parts)
        }
        if case .multi(let listed) = route, listed.count > max(1, maxStreamFeeds) {
            var seen: Set<String> = []
            let feeds = listed.filter { seen.insert($0).inserted }  // a name twice would be followed on two streams
            let size = max(1, maxStreamFeeds)
            let parts = stride(from: 0, to: feeds.count, by: size).map { start in
                follow(.multi(Array(feeds[start..<min(start + size, feeds.count)])), transform: transform)
            }
            return Self.merge(parts)
        }
        var settings = StreamMachine.Settings()
        settings.stallFactor = stallFactor
        settings.defaultHeartbeat = assumedHeartbeat
        settings.maximumBackoff = maximumBackoff
        settings.outageGrace = outageGrace
        var cached: [String: FeedCursor] = [:]
        if let cache {
            for feed in route.feeds { cached[feed] = cache.load(feed: feed) }
        }
        let machine = StreamMachine(route: route, token: token, settings: settings, cached: cached, jitter: { Double.random(in: 0..<1) })
        let client = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                await StreamDriver.run(machine: machine, client: client, transform: transform, continuation: continuation)
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Follows one feed through its cacheable log (``FeedDelivery/cacheableLog``).
    private func poll<Transform: EventTransform>(_ feed: String, transform: Transform) -> AsyncThrowingStream<Transform.Element, any Error> {
        var settings = PollMachine.Settings()
        settings.maximumBackoff = maximumBackoff
        let machine = PollMachine(feed: feed, token: token, settings: settings, cached: cache?.load(feed: feed), jitter: { Double.random(in: 0..<1) })
        let client = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                await StreamDriver.run(machine: machine, client: client, transform: transform, continuation: continuation)
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// One sequence of the elements of `parts`, in the order they come: it ends when every part has
    /// ended (each ends when no feed of it is left), or with the first part's error.
    private static func merge<Element: Sendable>(_ parts: [AsyncThrowingStream<Element, any Error>]) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for part in parts {
                            group.addTask { for try await element in part { continuation.yield(element) } }
                        }
                        // next() rethrows the first error, and leaving the group with it cancels the other parts.
                        while try await group.next() != nil {}
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    // MARK: Requests

    /// The transport streams are opened with.
    var resolvedStreamTransport: any FeedStreamTransport {
        streamTransport ?? URLSessionStreamTransport(configuration: sessionConfiguration, insecure: insecure)
    }

    /// The URL of a path under ``baseURL`` with a query (each value percent-encoded, `@` as `%40`).
    func url(path: String, query: [QueryParameter] = []) -> URL? {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var text = base + path
        if !query.isEmpty {
            text += "?" + query.map { "\(Self.percentEncode($0.name))=\(Self.percentEncode($0.value))" }.joined(separator: "&")
        }
        return URL(string: text)
    }

    /// RFC 3986 §2.3 unreserved characters stay; everything else is percent-encoded.
    static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    func urlRequest(for request: StreamRequest) -> URLRequest? {
        guard let url = url(path: request.path, query: request.query) else { return nil }
        var urlRequest = URLRequest(url: url)
        switch request.kind {
        case .events:
            urlRequest.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            urlRequest.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        case .log:
            // No `Cache-Control` of ours: the answers are meant to come from caches on the way.
            urlRequest.setValue("application/json", forHTTPHeaderField: "Accept")
        }
        if let id = request.lastEventID { urlRequest.setValue(id, forHTTPHeaderField: "Last-Event-ID") }
        if let token = request.token { urlRequest.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return urlRequest
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// How a ``FeedClient`` follows feeds.
public enum FeedDelivery: Sendable, Equatable {
    /// One event stream (`GET /feeds/{feed}/events`, or `GET /events?feed=…` for several): the default.
    case eventStream
    /// Each feed's cacheable log (`GET /feeds/{feed}/log`, docs/protocol.md, "Reads through HTTP
    /// caches"), one request at a time per feed, a live one waiting at the head: for public feeds
    /// served through an HTTP cache or a CDN, which collapses the reads of many clients into one. The
    /// events and guarantees are the event stream's; ``FeedEvent/unavailable(feed:detail:)`` is never
    /// reported (a store outage is a `503`, retried).
    case cacheableLog
}

/// A client error that ends a sequence (the server's refusals are events, not errors).
public enum FeedClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The base URL and a path make no valid URL.
    case invalidURL(String)

    public var description: String {
        switch self {
        case .invalidURL(let url): "not a valid URL: \(url)"
        }
    }
}
