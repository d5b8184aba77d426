import DiffStream
import DiffStreamJSON

/// The reads of one feed through its cacheable log (`GET /feeds/{feed}/log`, docs/protocol.md, "Reads
/// through HTTP caches"): a pure state machine beside ``StreamMachine``, with its inputs and actions, so
/// that ``StreamDriver`` runs either. Each read is one request whose whole body is one answer: the
/// snapshot (a read with no position), or the batches after the position; a read at the head is a live
/// one, which waits at the server (or a cache in front of it) for the next batch.
///
/// The guarantees are the event stream's (``FeedCursor``): every batch applies to the version held, or
/// the feed starts over from the snapshot (a gap, another history, or `409`: a position the server no
/// longer holds); a `404` after the feed was followed is its deletion, and it is asked for again after a
/// backoff, as a stream does. A failed read is made again from the same position after `2 s × 2^n`
/// (at most ``Settings/maximumBackoff``, with the same jitter); a live read with no answer after
/// ``Settings/readTimeout`` is given up and made again.
///
/// Updates carry the id of the last batch of each answer; the batches before it in the same answer
/// carry an empty `eventID` (ids are opaque to clients: the answer names only where it ends).
struct PollMachine: FollowingMachine {
    typealias Input = StreamMachine.Input
    typealias Action = StreamMachine.Action

    struct Settings: Sendable {
        /// The longest wait between reads after failures, in seconds (before jitter).
        var maximumBackoff: Double = 30
        /// The first wait after a failure, in seconds (the event stream's `retry:`).
        var firstRetry: Double = 2
        /// A read with no answer after this long is given up (a live read waits 20 s at the server).
        var readTimeout: Double = 45
    }

    private enum Phase: Equatable, Sendable {
        case idle
        case reading(id: Int, since: Double, opened: Bool)
        case waiting(until: Double)
        case awaitingToken
        case finished
    }

    let feed: String
    let settings: Settings
    private(set) var token: String?
    private(set) var cursor: FeedCursor
    /// The id to read after (nil: the snapshot), and whether the last answer reached the head.
    private(set) var next: String?
    private(set) var upToDate = false
    /// The server's cursor, passed back on live reads.
    private(set) var serverCursor: String?
    private var phase = Phase.idle
    private var body: [UInt8] = []
    private var readCount = 0
    private var failures = 0
    private var restarts = 0
    private var connected = false
    private var tokenRequested = false
    private var tokenRetryAt = 0.0
    private var jitter: @Sendable () -> Double

    /// The most bytes one answer may have (a chunk holds at most 64 batches).
    static let maximumAnswer = 64 << 20

    /// - Parameters:
    ///   - cached: what the offline cache holds for the feed: yielded (stale) at start, and read after.
    ///   - jitter: uniform draws from `0..<1` (injected, so tests can fix them).
    init(feed: String, token: String?, settings: Settings = Settings(), cached: FeedCursor? = nil, jitter: @escaping @Sendable () -> Double) {
        self.feed = feed
        self.token = token
        self.settings = settings
        self.jitter = jitter
        cursor = cached ?? FeedCursor()
        next = cursor.eventID
    }

    var isFinished: Bool { phase == .finished }

    var nextDeadline: Double? {
        switch phase {
        case .waiting(let until): until
        case .reading(_, let since, _): since + settings.readTimeout
        case .idle, .awaitingToken, .finished: nil
        }
    }

    mutating func handle(_ input: Input, now: Double) -> [Action] {
        var actions: [Action] = []
        switch input {
        case .start:
            if cursor.isStale, let update = StreamMachine.update(feed: feed, cursor: cursor, change: .full(.cached), batch: nil) {
                actions.append(.emit(.update(update)))
            }
            read(now: now, into: &actions)
        case .opened(let id):
            guard case .reading(id, let since, _) = phase else { break }
            phase = .reading(id: id, since: since, opened: true)
            if !connected {
                connected = true
                actions.append(.emit(.connection(.connected)))
            }
        case .bytes(let id, let bytes):
            guard case .reading(id, _, true) = phase else { break }
            body.append(contentsOf: bytes)
            if body.count > Self.maximumAnswer {
                actions.append(.cancel(id: id))
                fail(reason: "an answer of more than \(Self.maximumAnswer) bytes", now: now, into: &actions)
            }
        case .closed(let id, let error):
            guard case .reading(id, _, let opened) = phase else { break }
            if opened, error == nil { answer(now: now, into: &actions) } else { fail(reason: error ?? "the server closed the connection", now: now, into: &actions) }
        case .refusedConnection(let id, let status, let body):
            guard case .reading(id, _, _) = phase else { break }
            refused(status: status, body: body, now: now, into: &actions)
        case .timer:
            switch phase {
            case .waiting(let until) where until <= now:
                read(now: now, into: &actions)
            case .reading(let id, let since, _) where since + settings.readTimeout <= now:
                actions.append(.cancel(id: id))
                fail(reason: "no answer in \(settings.readTimeout) s", now: now, into: &actions)
            default:
                break
            }
        case .token(let fresh):
            tokenRequested = false
            guard let fresh else {
                if phase == .awaitingToken { finish(into: &actions) }
                break
            }
            token = fresh
            if phase == .awaitingToken {
                phase = .waiting(until: max(now, tokenRetryAt))
                if tokenRetryAt <= now { read(now: now, into: &actions) }
            }
        case .stop:
            if case .reading(let id, _, _) = phase { actions.append(.cancel(id: id)) }
            finish(into: &actions)
        }
        return actions
    }

    // MARK: Reads

    /// The next read: the snapshot, the log after `next`, or a live read at the head with the cursor.
    private mutating func read(now: Double, into actions: inout [Action]) {
        readCount += 1
        body = []
        phase = .reading(id: readCount, since: now, opened: false)
        var query: [QueryParameter] = []
        if let next {
            query.append(QueryParameter(name: "after", value: next))
            if upToDate {
                query.append(QueryParameter(name: "live", value: "1"))
                if let serverCursor { query.append(QueryParameter(name: "cursor", value: serverCursor)) }
            }
        }
        if !connected { actions.append(.emit(.connection(.connecting))) }
        actions.append(.connect(id: readCount, StreamRequest(path: "/feeds/\(feed)/log", query: query, lastEventID: nil, token: token, kind: .log)))
    }

    /// The read after a backoff, counting one more failure.
    private mutating func later(now: Double) -> Double {
        let delay = min(settings.maximumBackoff, settings.firstRetry * Double(1 << min(failures, 10))) * (1 + 0.5 * jitter())
        failures += 1
        phase = .waiting(until: now + delay)
        return delay
    }

    private mutating func fail(reason: String, now: Double, into actions: inout [Action]) {
        connected = false
        let delay = later(now: now)
        actions.append(.emit(.connection(.disconnected(reason: reason, retryIn: delay))))
    }

    /// Starts over from the snapshot: at once the first time, after a backoff when it happens again in a
    /// row (a cache may hold the old snapshot for its few seconds of `max-age`).
    private mutating func restart(reason: String, now: Double, into actions: inout [Action]) {
        actions.append(.emit(.resyncing(feed: feed, reason: reason)))
        cursor.forgetPosition()
        next = nil
        upToDate = false
        restarts += 1
        if restarts == 1 { read(now: now, into: &actions) } else { _ = later(now: now) }
    }

    private mutating func finish(into actions: inout [Action]) {
        phase = .finished
        actions.append(.finish)
    }

    // MARK: Answers

    private mutating func answer(now: Double, into actions: inout [Action]) {
        let page: WireLogPage
        do {
            page = try WireCodec.decodeLogPage(body)
        } catch {
            actions.append(.emit(.serverError(FeedProblem(feed: feed, status: 200, error: "unreadable answer", detail: error.description))))
            restart(reason: "an unreadable answer: \(error.description)", now: now, into: &actions)
            return
        }
        body = []
        guard page.feed == feed, let pageNext = page.next else {
            restart(reason: "an answer that is not this feed's log", now: now, into: &actions)
            return
        }
        if let snapshot = page.snapshot {
            guard let version = snapshot.version, case .success(.snapshot(let sections)) = snapshot.body else {
                restart(reason: "a snapshot without a version", now: now, into: &actions)
                return
            }
            let outcome = cursor.receiveSnapshot(sections, history: snapshot.history, version: version, eventID: page.batches.isEmpty ? pageNext : "")
            if case .snapshot(let reason) = outcome, let update = StreamMachine.update(feed: feed, cursor: cursor, change: .full(reason), batch: nil) {
                actions.append(.store(feed: feed, cursor))
                actions.append(.emit(.update(update)))
            }
        } else if next == nil {
            restart(reason: "batches without a snapshot", now: now, into: &actions)
            return
        }
        for (index, batch) in page.batches.enumerated() {
            guard let from = batch.from, let version = batch.version, case .success(.batch(let operations)) = batch.body else {
                restart(reason: "a batch without from or version", now: now, into: &actions)
                return
            }
            let id = index == page.batches.count - 1 ? pageNext : ""
            switch cursor.receiveBatch(operations, history: batch.history, from: from, version: version, eventID: id) {
            case .applied:
                if let update = StreamMachine.update(feed: feed, cursor: cursor, change: .batch, batch: operations) {
                    if !id.isEmpty { actions.append(.store(feed: feed, cursor)) }
                    actions.append(.emit(.update(update)))
                }
            case .duplicate, .snapshot, .stale:
                break
            case .gap(let reason):
                restart(reason: reason, now: now, into: &actions)
                return
            }
        }
        next = pageNext
        upToDate = page.upToDate
        if let cursor = page.cursor { serverCursor = cursor }
        failures = 0
        restarts = 0
        read(now: now, into: &actions)
    }

    /// A read refused with a status (its body gathered by the driver).
    private mutating func refused(status: Int, body: [UInt8], now: Double, into actions: inout [Action]) {
        let value = (try? JSONParser.parse(body)) ?? .null
        let problem = FeedProblem(feed: feed, status: status, error: value["error"]?.stringValue ?? "HTTP \(status)",
                                  detail: value["detail"]?.stringValue ?? String(decoding: body.prefix(200), as: UTF8.self))
        switch status {
        case 409:
            restart(reason: problem.detail.isEmpty ? problem.error : problem.detail, now: now, into: &actions)
        case 404:
            if cursor.snapshot != nil {
                cursor.markDeleted()
                actions.append(.emit(.deleted(feed: feed)))
            } else {
                actions.append(.emit(.notFound(problem)))
            }
            next = nil
            upToDate = false
            _ = later(now: now)
        case 401, 403:
            phase = .awaitingToken
            tokenRetryAt = now + min(settings.maximumBackoff, settings.firstRetry * Double(1 << min(failures, 10))) * (1 + 0.5 * jitter())
            failures += 1
            actions.append(.emit(status == 401 ? .unauthorized(problem) : .forbidden(problem)))
            if !tokenRequested {
                tokenRequested = true
                actions.append(.askForToken(problem))
            }
        case 400..<500 where status != 408 && status != 429:
            actions.append(.emit(.serverError(problem)))
            finish(into: &actions)
        default:
            actions.append(.emit(.serverError(problem)))
            _ = later(now: now)
        }
    }
}
