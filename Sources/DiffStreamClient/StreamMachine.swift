import DiffStream
import DiffStreamJSON

/// A request the transport is asked to open.
struct StreamRequest: Equatable, Sendable {
    /// What the request reads: an event stream, or one answer of a feed's cacheable log.
    enum Kind: Equatable, Sendable { case events, log }

    /// `/feeds/NAME/events`, `/events` or `/feeds/NAME/log`.
    var path: String
    /// Query parameters in order (values not yet percent-encoded).
    var query: [QueryParameter]
    /// The `Last-Event-ID` header (single-feed route).
    var lastEventID: String?
    /// The token, sent as `Authorization: Bearer`.
    var token: String?
    var kind: Kind = .events
}

/// A pure state machine that follows feeds over connections the driver makes (``StreamDriver``): the
/// event stream's (``StreamMachine``) or the cacheable log's (``PollMachine``).
protocol FollowingMachine: Sendable {
    /// The token the machine's connections carry now.
    var token: String? { get }
    /// When the driver must send ``StreamMachine/Input/timer`` next, if at all.
    var nextDeadline: Double? { get }
    mutating func handle(_ input: StreamMachine.Input, now: Double) -> [StreamMachine.Action]
}

/// A name and a value of a URL's query.
struct QueryParameter: Equatable, Sendable {
    var name: String
    var value: String
}

/// The connection and resume logic of a feed client, for one feed (the route `/feeds/{feed}/events`) or
/// many (`/events?feed=NAME@ID…`): a pure state machine. Inputs carry the time (seconds of a monotonic
/// clock the driver injects); outputs are actions the driver performs (open or cancel a connection, emit
/// an event, ask the app for a token, finish). Nothing here sleeps or touches a socket.
///
/// - Reconnects after `retry:` (2 s by default), doubling per consecutive failure up to
///   ``Settings/maximumBackoff``, with jitter: a delay `d` becomes a uniform draw from `d` to `1.5 d`.
///   The count of failures starts again when a stream's first block arrives (`retry:` or
///   `: heartbeat N`): the first reconnection after a stream that opened waits `retry:`.
/// - A feed refused on its own (`deleted`, `notfound`) is retried after a backoff counted for that feed
///   alone: the feed's own snapshot or batch starts its count again, as does a stream that carried it
///   for ``Settings/outageGrace`` seconds without refusing it; another feed's events do not.
/// - After a `401`/`403` (or `unauthorized`/`forbidden` on the stream) a fresh token from the hook is
///   used after the same backoff, counted from the refusal: a hook that answers at once with a token
///   the server refuses again does not make the client loop. A connection still being made when the
///   token is used is cancelled (the new one carries the new token).
/// - Takes the stream as dead after ``Settings/stallFactor`` (2.5) heartbeat intervals of silence; the
///   interval is the one the server announces in the comment `: heartbeat N`, else 15 s.
/// - Resumes each feed from its last event id; on a gap drops that feed's position and reconnects.
/// - Reports a feed's store outage (`event: unavailable` / `available`, no id) once each way, without
///   touching its position. An outage in force when a stream ends is kept; the new stream confirms it
///   (the server says `unavailable` again right after the feed's first events) or, after
///   ``Settings/outageGrace`` seconds without that, it is taken as over (`.available`).
/// - On the multi-feed route, `unavailable` for a feed before any snapshot or batch of it on this stream
///   is a feed the server could not load: it is not followed on this stream (docs/protocol.md, "Several
///   instances"), so besides being reported it is retried like a feed not found, with its own backoff.
///   A feed the server holds and resumed at its current version looks the same on the wire (nothing
///   before `unavailable`); it is retried too, or taken back at once if the server says `available`
///   for it (only a feed it follows gets that).
/// - A feed yielded from the offline cache (stale) that the new stream resumes at the cached id with
///   nothing missed gets no event at all: when ``Settings/outageGrace`` seconds after the stream opened
///   nothing came for it, what is held is current, and it is yielded again, not stale (`.full(.resync)`).
struct StreamMachine: FollowingMachine {
    struct Settings: Sendable {
        /// The heartbeat interval assumed until the server announces one, in seconds.
        var defaultHeartbeat: Double = 15
        /// Silence, in heartbeat intervals, after which the stream is taken as dead.
        var stallFactor: Double = 2.5
        /// The longest wait between reconnections, in seconds (before jitter).
        var maximumBackoff: Double = 30
        /// The reconnection time before the server sends `retry:`, in seconds (WHATWG's is
        /// implementation-defined; the server sends 2000 ms first thing).
        var defaultRetry: Double = 2
        /// How long a new stream has to repeat an outage in force before it is taken as over, in seconds.
        var outageGrace: Double = 2
    }

    enum Route: Equatable, Sendable {
        /// `GET /feeds/{feed}/events`.
        case single(String)
        /// `GET /events?feed=A&feed=B@ID…`.
        case multi([String])

        var feeds: [String] {
            switch self {
            case .single(let feed): [feed]
            case .multi(let feeds): feeds
            }
        }
    }

    enum Input: Sendable {
        case start
        /// The server answered `200` on connection `connection`.
        case opened(connection: Int)
        /// The server answered another status, with its body.
        case refusedConnection(connection: Int, status: Int, body: [UInt8])
        case bytes(connection: Int, [UInt8])
        /// The connection ended (`error` nil: the server closed it).
        case closed(connection: Int, error: String?)
        /// The deadline the driver was told of passed (or any time: a timer input is always safe).
        case timer
        /// The app's answer to ``Action/askForToken(_:)``.
        case token(String?)
        case stop
    }

    enum Action: Sendable {
        case connect(id: Int, StreamRequest)
        case cancel(id: Int)
        case emit(WireFeedEvent)
        /// Ask the token hook for a fresh token (answer with ``Input/token(_:)``).
        case askForToken(FeedProblem)
        /// Save what a feed holds (the offline cache).
        case store(feed: String, FeedCursor)
        case finish
    }

    private enum FeedStatus: Equatable, Sendable {
        case active
        /// Retried (reconnected) at this time: not found, deleted.
        case retry(at: Double)
        /// Refused (401/403): waits for the token hook's answer.
        case awaitingToken
        case stopped
    }

    /// A store outage the app was told of (``FeedEvent/unavailable(feed:detail:)``).
    private enum Outage: Equatable, Sendable {
        /// Reported on the open stream.
        case reported
        /// Reported on an earlier stream: over unless this one reports it by `until`.
        case unconfirmed(until: Double)
    }

    private enum Phase: Equatable, Sendable {
        case idle
        case connecting(id: Int)
        case open(id: Int)
        case waiting(until: Double)
        case finished
    }

    let route: Route
    let settings: Settings
    private(set) var token: String?
    private var jitter: @Sendable () -> Double
    private var cursors: [String: FeedCursor] = [:]
    private var status: [String: FeedStatus] = [:]
    private var outages: [String: Outage] = [:]
    private var phase = Phase.idle
    private var connectionCount = 0
    private var parser = SSEParser()
    private var retry: Double
    private(set) var heartbeat: Double
    private var lastActivity = 0.0
    private var failures = 0
    /// Consecutive refusals of each feed on its own (`deleted`, `notfound`, …): its retry's backoff.
    private var feedFailures: [String: Int] = [:]
    /// When the open stream has carried its feeds long enough for their failure counts to start again.
    private var settleAt: Double?
    /// The feeds that had a snapshot or a batch on the stream in progress.
    private var heard: Set<String> = []
    /// When the open stream confirms the cached snapshots it resumed and sent nothing for.
    private var confirmAt: Double?
    private var tokenRequested = false
    /// When a fresh token may be used: the backoff after the last refusal.
    private var tokenRetryAt = 0.0

    /// - Parameter jitter: uniform draws from `0..<1` (injected, so tests can fix them).
    init(route: Route, token: String?, settings: Settings = Settings(), cached: [String: FeedCursor] = [:], jitter: @escaping @Sendable () -> Double) {
        self.route = route
        self.token = token
        self.settings = settings
        self.jitter = jitter
        retry = settings.defaultRetry
        heartbeat = settings.defaultHeartbeat
        for feed in route.feeds {
            cursors[feed] = cached[feed] ?? FeedCursor()
            status[feed] = .active
        }
    }

    /// What a feed holds now (tests, the offline cache).
    func cursor(of feed: String) -> FeedCursor? { cursors[feed] }

    /// Whether the app was told the feed is unavailable and not yet that it is available again.
    func isUnavailable(_ feed: String) -> Bool { outages[feed] != nil }

    var isFinished: Bool { phase == .finished }

    /// When the driver must send ``Input/timer`` next, if at all.
    var nextDeadline: Double? {
        switch phase {
        case .idle, .finished: return nil
        case .waiting(let until): return until
        case .connecting, .open:
            let stall = lastActivity + heartbeat * settings.stallFactor
            let retries = status.values.compactMap { if case .retry(let at) = $0 { at } else { nil } }
            let unconfirmed = outages.values.compactMap { if case .unconfirmed(let until) = $0 { until } else { nil } }
            return ([stall] + retries + unconfirmed + [confirmAt].compactMap { $0 }).min()
        }
    }

    /// The delay before the next reconnection: `retry × 2^failures` capped, then jittered up to +50 %
    /// (the first reconnection after a working stream, one whose first block arrived, waits `retry`, as
    /// WHATWG §9.2.3 says).
    func backoff() -> Double { backoff(after: failures) }

    private func backoff(after count: Int) -> Double {
        let base = min(settings.maximumBackoff, retry * Double(1 << min(count, 10)))
        return base * (1 + 0.5 * jitter())
    }

    /// The delay before the next reconnection, counting one more failure.
    private mutating func nextDelay() -> Double {
        let delay = backoff()
        failures += 1
        return delay
    }

    /// The delay before retrying a feed refused on its own, counting one more of its failures.
    private mutating func nextDelay(for feed: String) -> Double {
        let count = feedFailures[feed, default: 0]
        feedFailures[feed] = count + 1
        return backoff(after: count)
    }

    mutating func handle(_ input: Input, now: Double) -> [Action] {
        var actions: [Action] = []
        settle(now: now)
        switch input {
        case .start:
            for (feed, cursor) in cursors.sorted(by: { $0.key < $1.key }) where cursor.isStale {
                if let update = Self.update(feed: feed, cursor: cursor, change: .full(.cached), batch: nil) { actions.append(.emit(.update(update))) }
            }
            connect(now: now, into: &actions)
        case .opened(let id):
            guard isCurrent(id) else { break }
            phase = .open(id: id)
            lastActivity = now
            actions.append(.emit(.connection(.connected)))
            settleAt = now + settings.outageGrace
            if activeFeeds.contains(where: { cursors[$0]?.isStale == true }) { confirmAt = now + settings.outageGrace }
            // Outages of the feeds on this stream; one retried meanwhile stays reported.
            for feed in outages.keys where status[feed] == .active { outages[feed] = .unconfirmed(until: now + settings.outageGrace) }
        case .refusedConnection(let id, let code, let body):
            guard isCurrent(id) else { break }
            phase = .idle
            refuseAll(status: code, body: body, now: now, into: &actions)
        case .bytes(let id, let bytes):
            guard case .open(id) = phase else { break }
            lastActivity = now
            for message in parser.feed(bytes) {
                handle(message, now: now, into: &actions)
                guard case .open(id) = phase else { break }  // a gap reconnected, or the stream ended
            }
        case .closed(let id, let error):
            guard isCurrent(id) else { break }
            parser.reset()
            phase = .idle
            let delay = nextDelay()
            if activeFeeds.isEmpty == false || hasRetries {
                phase = .waiting(until: now + delay)
                actions.append(.emit(.connection(.disconnected(reason: error ?? "the server closed the stream", retryIn: delay))))
            }
        case .timer:
            timer(now: now, into: &actions)
        case .token(let fresh):
            tokenRequested = false
            let waiting = status.filter { $0.value == .awaitingToken }.map(\.key)
            guard let fresh else {
                for feed in waiting { status[feed] = .stopped }
                break
            }
            token = fresh
            guard !waiting.isEmpty else { break }  // used from the next connection on
            // The refused feeds come back after the backoff of the refusal (at once when the hook took longer).
            let at = max(now, tokenRetryAt)
            for feed in waiting { status[feed] = .retry(at: at) }
            switch phase {
            case .open, .connecting:
                // Reopened with the new token when the time comes (cancelling the connection in progress).
                if at <= now { reconnectNow(now: now, into: &actions) }
            case .idle:
                if at <= now { connect(now: now, into: &actions) }
            case .waiting(let until):
                if min(until, at) <= now {
                    phase = .idle
                    connect(now: now, into: &actions)
                } else {
                    phase = .waiting(until: min(until, at))
                }
            case .finished:
                break
            }
        case .stop:
            for feed in status.keys { status[feed] = .stopped }
        }
        reconcile(now: now, into: &actions)
        return actions
    }

    // MARK: Events on the stream

    private mutating func handle(_ message: SSEMessage, now: Double, into actions: inout [Action]) {
        switch message {
        case .retry(let milliseconds):
            retry = Double(milliseconds) / 1000
            failures = 0  // the stream's first block: it opened
        case .comment(let text):
            // `: heartbeat N` announces the interval (docs/protocol.md); the bare `: heartbeat` keeps alive.
            if text.hasPrefix("heartbeat "), let seconds = Double(text.dropFirst("heartbeat ".count)), seconds > 0, seconds.isFinite {
                heartbeat = seconds
                failures = 0  // the stream's first block: it opened
            }
        case .event(let event):
            let message: FeedMessage
            do {
                message = try FeedMessage.decode(event, defaultFeed: singleFeed)
            } catch {
                let feeds = activeFeeds
                for feed in feeds { cursors[feed]?.forgetPosition() }
                actions.append(.emit(.serverError(FeedProblem(feed: singleFeed, status: nil, error: "unreadable event", detail: error.description))))
                reconnectNow(now: now, into: &actions)
                return
            }
            handle(message, now: now, into: &actions)
        }
    }

    private mutating func handle(_ message: FeedMessage, now: Double, into actions: inout [Action]) {
        switch message {
        case .snapshot(let feed, let history, let version, let snapshot, let id):
            guard var cursor = cursors[feed], status[feed] == .active else { return }
            heard.insert(feed)
            let outcome = cursor.receiveSnapshot(snapshot, history: history, version: version, eventID: Self.feedID(id, feed: feed, route: route))
            cursors[feed] = cursor
            failures = 0
            feedFailures[feed] = nil
            if case .snapshot(let reason) = outcome, let update = Self.update(feed: feed, cursor: cursor, change: .full(reason), batch: nil) {
                actions.append(.store(feed: feed, cursor))  // cached before the app sees it
                actions.append(.emit(.update(update)))
            }
        case .batch(let feed, let history, let from, let version, let batch, let id):
            guard var cursor = cursors[feed], status[feed] == .active else { return }
            heard.insert(feed)
            let outcome = cursor.receiveBatch(batch, history: history, from: from, version: version, eventID: Self.feedID(id, feed: feed, route: route))
            cursors[feed] = cursor
            switch outcome {
            case .applied:
                failures = 0
                feedFailures[feed] = nil
                if let update = Self.update(feed: feed, cursor: cursor, change: .batch, batch: batch) {
                    actions.append(.store(feed: feed, cursor))
                    actions.append(.emit(.update(update)))
                }
            case .duplicate, .snapshot, .stale:
                break
            case .gap(let reason):
                actions.append(.emit(.resyncing(feed: feed, reason: reason)))
                reconnectNow(now: now, into: &actions)
            }
        case .deleted(let feed):
            guard status[feed] != nil else { return }
            cursors[feed]?.markDeleted()
            outages[feed] = nil  // the feed's part of the stream ended; a later stream says again
            status[feed] = .retry(at: now + nextDelay(for: feed))
            actions.append(.emit(.deleted(feed: feed)))
        case .refused(let feed, let kind, let error, let detail):
            guard status[feed] != nil else { return }
            outages[feed] = nil
            let problem = FeedProblem(feed: feed, status: nil, error: error, detail: detail)
            switch kind {
            case .notFound:
                status[feed] = .retry(at: now + nextDelay(for: feed))
                actions.append(.emit(.notFound(problem)))
            case .unauthorized, .forbidden:
                status[feed] = .awaitingToken
                tokenRetryAt = max(tokenRetryAt, now + nextDelay(for: feed))
                actions.append(.emit(kind == .unauthorized ? .unauthorized(problem) : .forbidden(problem)))
                if !tokenRequested {
                    tokenRequested = true
                    actions.append(.askForToken(problem))
                }
            }
        case .unavailable(let feed, let detail):
            // No id: the position (and the SSE last-event-id the parser keeps) is not touched.
            guard status[feed] == .active else { return }
            if outages.updateValue(.reported, forKey: feed) == nil { actions.append(.emit(.unavailable(feed: feed, detail: detail))) }
            if case .multi = route, !heard.contains(feed) {
                // Not loaded, so not followed on this stream: reconnect for it after its backoff.
                status[feed] = .retry(at: now + nextDelay(for: feed))
            }
        case .available(let feed):
            guard let state = status[feed] else { return }
            if case .retry = state, outages[feed] != nil { status[feed] = .active }  // the server follows it after all
            if outages.removeValue(forKey: feed) != nil { actions.append(.emit(.available(feed: feed))) }
        case .unknown:
            break  // an event of a newer server
        }
    }

    /// A whole request refused with a status.
    private mutating func refuseAll(status code: Int, body: [UInt8], now: Double, into actions: inout [Action]) {
        let value = (try? JSONParser.parse(body)) ?? .null
        let problem = FeedProblem(feed: singleFeed, status: code, error: value["error"]?.stringValue ?? "HTTP \(code)",
                                  detail: value["detail"]?.stringValue ?? String(decoding: body.prefix(200), as: UTF8.self))
        let feeds = activeFeeds
        switch code {
        case 401, 403:
            for feed in feeds { status[feed] = .awaitingToken }
            tokenRetryAt = now + nextDelay()
            actions.append(.emit(code == 401 ? .unauthorized(problem) : .forbidden(problem)))
            if !tokenRequested {
                tokenRequested = true
                actions.append(.askForToken(problem))
            }
        case 404:
            let at = now + nextDelay()
            for feed in feeds { status[feed] = .retry(at: at) }
            actions.append(.emit(.notFound(problem)))
        case 400..<500 where code != 408 && code != 429:
            for feed in feeds { status[feed] = .stopped }
            actions.append(.emit(.serverError(problem)))
        default:
            phase = .waiting(until: now + nextDelay())
            actions.append(.emit(.serverError(problem)))
            // `503 {"error":"redis unavailable"}`: a feed this instance does not hold during an outage.
            if code == 503, problem.error.contains("unavailable") {
                for feed in feeds where outages[feed] == nil {
                    outages[feed] = .reported
                    actions.append(.emit(.unavailable(feed: feed, detail: problem.detail)))
                }
            }
        }
    }

    // MARK: Connections

    /// The feeds the open stream has carried for ``Settings/outageGrace`` seconds without refusing
    /// them: their failure counts start again (checked at any input: the counts are only read then).
    private mutating func settle(now: Double) {
        guard case .open = phase, let settle = settleAt, settle <= now else { return }
        settleAt = nil
        for feed in activeFeeds { feedFailures[feed] = nil }
    }

    private mutating func timer(now: Double, into actions: inout [Action]) {
        if case .open = phase {
            // Outages the new stream did not report again in time are over.
            for (feed, outage) in outages.sorted(by: { $0.key < $1.key }) {
                guard case .unconfirmed(let until) = outage, until <= now else { continue }
                outages[feed] = nil
                actions.append(.emit(.available(feed: feed)))
            }
        }
        if case .open = phase, let confirm = confirmAt, confirm <= now {
            // Resumed at the cached id and nothing missed: the cached snapshot is current. Not for a
            // feed the server says is unavailable: it answered from the state it holds, which may be
            // behind (it stays stale until a batch or snapshot comes).
            confirmAt = nil
            for feed in activeFeeds where outages[feed] == nil {
                guard var cursor = cursors[feed], cursor.isStale, cursor.eventID != nil else { continue }
                cursor.confirm()
                cursors[feed] = cursor
                if let update = Self.update(feed: feed, cursor: cursor, change: .full(.resync), batch: nil) { actions.append(.emit(.update(update))) }
            }
        }
        switch phase {
        case .waiting(let until) where now >= until:
            phase = .idle
            connect(now: now, into: &actions)
        case .connecting(let id), .open(let id):
            let silence = now - lastActivity
            if silence >= heartbeat * settings.stallFactor {
                actions.append(.cancel(id: id))
                actions.append(.emit(.connection(.stalled(silence: silence))))
                parser.reset()
                phase = .waiting(until: now + nextDelay())
            } else if status.values.contains(where: { if case .retry(let at) = $0 { at <= now } else { false } }) {
                reconnectNow(now: now, into: &actions)  // multi-feed: bring back the feeds that were not found or deleted
            }
        default:
            break
        }
    }

    private mutating func reconnectNow(now: Double, into actions: inout [Action]) {
        switch phase {
        case .open(let id), .connecting(let id): actions.append(.cancel(id: id))
        default: break
        }
        parser.reset()
        phase = .idle
        connect(now: now, into: &actions)
    }

    private mutating func connect(now: Double, into actions: inout [Action]) {
        for (feed, state) in status { if case .retry = state { status[feed] = .active } }
        let feeds = route.feeds.filter { status[$0] == .active }
        guard !feeds.isEmpty else { return }
        connectionCount += 1
        parser = SSEParser()
        settleAt = nil
        confirmAt = nil
        heard = []
        lastActivity = now
        phase = .connecting(id: connectionCount)
        let request: StreamRequest
        switch route {
        case .single(let feed):
            request = StreamRequest(path: "/feeds/\(feed)/events", query: [], lastEventID: cursors[feed]?.eventID, token: token)
        case .multi:
            // Each feed with its position: `feed=NAME@ID` (docs/protocol.md, "One stream for many feeds").
            let query = feeds.map { feed in QueryParameter(name: "feed", value: cursors[feed]?.eventID.map { "\(feed)@\($0)" } ?? feed) }
            request = StreamRequest(path: "/events", query: query, lastEventID: nil, token: token)
        }
        actions.append(.emit(.connection(.connecting)))
        actions.append(.connect(id: connectionCount, request))
    }

    /// After any input: finish when nothing is left to follow; drop a connection no feed needs; wait
    /// for the earliest retry.
    private mutating func reconcile(now: Double, into actions: inout [Action]) {
        guard phase != .finished else { return }
        if status.values.allSatisfy({ $0 == .stopped }) {
            switch phase {
            case .open(let id), .connecting(let id): actions.append(.cancel(id: id))
            default: break
            }
            phase = .finished
            actions.append(.finish)
            return
        }
        if activeFeeds.isEmpty {
            switch phase {
            case .open(let id), .connecting(let id):
                actions.append(.cancel(id: id))
                parser.reset()
                phase = .idle
            default: break
            }
        }
        if phase == .idle, let earliest = status.values.compactMap({ if case .retry(let at) = $0 { at } else { nil } }).min() {
            phase = .waiting(until: earliest)
        }
    }

    private var activeFeeds: [String] { route.feeds.filter { status[$0] == .active } }
    private var hasRetries: Bool { status.values.contains { if case .retry = $0 { true } else { false } } }
    private var singleFeed: String? { if case .single(let feed) = route { feed } else { nil } }

    private func isCurrent(_ id: Int) -> Bool {
        switch phase {
        case .connecting(let current), .open(let current): current == id
        default: false
        }
    }

    /// The position to resume a feed from: on the multi-feed route the id is `NAME@ID` and the feed
    /// is resumed with `feed=NAME@ID`, so the part after the first `@` is kept.
    static func feedID(_ id: String, feed: String, route: Route) -> String {
        guard case .multi = route, id.hasPrefix(feed + "@") else { return id }
        return String(id.dropFirst(feed.count + 1))
    }

    static func update(feed: String, cursor: FeedCursor, change: WireFeedUpdate.Change, batch: WireBatch?) -> WireFeedUpdate? {
        guard let snapshot = cursor.snapshot, let version = cursor.version else { return nil }
        var changed: [WireID] = []
        if let batch {
            for operation in batch.operations { if case .update(let item) = operation { changed.append(item.id) } }
        }
        return WireFeedUpdate(feed: feed, snapshot: snapshot, version: version, history: cursor.history, eventID: cursor.eventID ?? "",
                              change: change, operations: batch?.operations ?? [], changedItemIDs: changed)
    }
}
