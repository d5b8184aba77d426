import DiffStream
import DiffStreamJSON
import Testing
@testable import DiffStreamClient

/// The resume, gap, backoff and heartbeat rules, driven without sockets: inputs with an injected time.
struct StreamMachineTests {
    static let snapshot7 = """
    event: snapshot\nid: ds1.aaaa.7\ndata: {"feed":"home","history":"aaaa","version":7,"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"k","model":1}]}]}\n\n
    """
    static func batch(from: Int, history: String = "aaaa", feed: String = "home", ops: String = #"[{"op":"update","item":"a","kind":"k","model":2}]"#, idPrefix: String = "") -> String {
        "event: batch\nid: \(idPrefix)ds1.\(history).\(from + 1)\ndata: {\"feed\":\"\(feed)\",\"history\":\"\(history)\",\"from\":\(from),\"version\":\(from + 1),\"ops\":\(ops)}\n\n"
    }

    /// A machine that has connected (connection 1), been answered 200 and received `text`.
    static func running(_ texts: String..., route: StreamMachine.Route = .single("home"), jitter: Double = 0) -> (StreamMachine, [StreamMachine.Action]) {
        var machine = StreamMachine(route: route, token: nil, jitter: { jitter })
        var actions = machine.handle(.start, now: 0)
        actions += machine.handle(.opened(connection: 1), now: 0)
        for text in texts { actions += machine.handle(.bytes(connection: 1, Array(text.utf8)), now: 0) }
        return (machine, actions)
    }

    static func requests(_ actions: [StreamMachine.Action]) -> [StreamRequest] {
        actions.compactMap { if case .connect(_, let request) = $0 { request } else { nil } }
    }

    static func updates(_ actions: [StreamMachine.Action]) -> [WireFeedUpdate] {
        actions.compactMap { if case .emit(.update(let update)) = $0 { update } else { nil } }
    }

    @Test func firstSnapshotThenBatch() {
        let (machine, actions) = Self.running(Self.snapshot7, Self.batch(from: 7))
        #expect(Self.requests(actions) == [StreamRequest(path: "/feeds/home/events", query: [], lastEventID: nil, token: nil)])
        let updates = Self.updates(actions)
        #expect(updates.map(\.change) == [.full(.first), .batch])
        #expect(updates.map(\.version) == [7, 8])
        #expect(updates.last?.changedItemIDs == ["a"])
        #expect(updates.last?.eventID == "ds1.aaaa.8")
        #expect(updates.last?.history == "aaaa")
        #expect(machine.cursor(of: "home")?.eventID == "ds1.aaaa.8")
        // Each update is cached before the app sees it.
        let order = actions.compactMap { action -> String? in
            switch action {
            case .store: "store"
            case .emit(.update): "emit"
            default: nil
            }
        }
        #expect(order == ["store", "emit", "store", "emit"])
    }

    @Test func duplicateBatchIsSkipped() {
        let (_, actions) = Self.running(Self.snapshot7, Self.batch(from: 6))
        #expect(Self.updates(actions).count == 1)
        #expect(!actions.contains { if case .emit(.resyncing) = $0 { true } else { false } })
    }

    /// A batch from a later version, another history, or straddling the version held: resync.
    @Test(arguments: [Self.batch(from: 9), Self.batch(from: 7, history: "bbbb")])
    func gapResyncs(_ batch: String) {
        var (machine, actions) = Self.running(Self.snapshot7)
        actions = machine.handle(.bytes(connection: 1, Array(batch.utf8)), now: 1)
        #expect(actions.contains { if case .emit(.resyncing(feed: "home", _)) = $0 { true } else { false } })
        #expect(actions.contains { if case .cancel(id: 1) = $0 { true } else { false } })
        #expect(Self.requests(actions).map(\.lastEventID) == [nil])  // a snapshot follows
        // A snapshot of the new history is announced as one.
        actions = machine.handle(.opened(connection: 2), now: 1)
        actions += machine.handle(.bytes(connection: 2, Array(Self.snapshot7.replacingOccurrences(of: "aaaa", with: "bbbb").utf8)), now: 1)
        #expect(Self.updates(actions).map(\.change) == [.full(.newHistory)])
    }

    /// A feed deleted and created again is announced as a new history (docs/client-swift.md).
    @Test func feedCreatedAgainAfterDeletionIsANewHistory() {
        var (machine, actions) = Self.running(Self.snapshot7, "event: deleted\ndata: {\"feed\":\"home\"}\n\n")
        #expect(actions.contains { if case .emit(.deleted(feed: "home")) = $0 { true } else { false } })
        _ = machine.handle(.closed(connection: 1, error: nil), now: 1)
        actions = machine.handle(.timer, now: machine.nextDeadline!)
        #expect(Self.requests(actions).map(\.lastEventID) == [nil])
        actions = machine.handle(.opened(connection: 2), now: 4)
        actions += machine.handle(.bytes(connection: 2, Array(Self.snapshot7.replacingOccurrences(of: "aaaa", with: "bbbb").replacingOccurrences(of: "7", with: "1").utf8)), now: 4)
        #expect(Self.updates(actions).map(\.change) == [.full(.newHistory)])
        #expect(Self.updates(actions).map(\.version) == [1])
    }

    /// A snapshot of the history held at a lower version is stale: not applied, not emitted.
    @Test func staleSnapshotIsSkipped() {
        let older = Self.snapshot7.replacingOccurrences(of: "7", with: "5")
        let (machine, actions) = Self.running(Self.snapshot7, older)
        #expect(Self.updates(actions).map(\.version) == [7])
        #expect(machine.cursor(of: "home")?.version == 7)
        #expect(machine.cursor(of: "home")?.eventID == "ds1.aaaa.7")
    }

    @Test func droppedConnectionResumesFromLastIDAfterRetry() {
        var (machine, _) = Self.running("retry: 1000\n\n", Self.snapshot7, jitter: 0.5)
        var actions = machine.handle(.closed(connection: 1, error: nil), now: 10)
        // The first failure waits `retry` (1 s) jittered up to +50 %: 0.5 → 1.25 s.
        #expect(actions.contains { if case .emit(.connection(.disconnected(_, retryIn: 1.25))) = $0 { true } else { false } })
        #expect(machine.nextDeadline == 11.25)
        actions = machine.handle(.timer, now: 11)
        #expect(Self.requests(actions).isEmpty)
        actions = machine.handle(.timer, now: 11.25)
        #expect(Self.requests(actions).map(\.lastEventID) == ["ds1.aaaa.7"])
    }

    @Test func backoffDoublesUpToTheCap() {
        var machine = StreamMachine(route: .single("home"), token: nil, jitter: { 0 })
        var delays: [Double] = []
        var now = 0.0
        _ = machine.handle(.start, now: now)
        for id in 1...8 {
            _ = machine.handle(.closed(connection: id, error: "refused"), now: now)
            let deadline = machine.nextDeadline!
            delays.append(deadline - now)
            now = deadline
            _ = machine.handle(.timer, now: now)
        }
        #expect(delays == [2, 4, 8, 16, 30, 30, 30, 30])
    }

    /// The count of failures starts again when a stream's first block arrives, not only with an event:
    /// a resumed stream that stays quiet and then ends is reconnected after `retry`. A `200` alone
    /// (no first block) does not count as opened.
    @Test func firstBlockStartsTheBackoffAgain() {
        var machine = StreamMachine(route: .single("home"), token: nil, jitter: { 0 })
        var now = 0.0
        _ = machine.handle(.start, now: now)
        for id in 1...3 {
            _ = machine.handle(.closed(connection: id, error: "refused"), now: now)
            now = machine.nextDeadline!
            _ = machine.handle(.timer, now: now)
        }
        #expect(now == 2 + 4 + 8)
        _ = machine.handle(.opened(connection: 4), now: now)
        _ = machine.handle(.bytes(connection: 4, Array(Self.firstBlock.utf8)), now: now)
        var actions = machine.handle(.closed(connection: 4, error: nil), now: now + 20)
        #expect(Self.retryIn(actions) == [2])
        _ = machine.handle(.timer, now: machine.nextDeadline!)
        _ = machine.handle(.opened(connection: 5), now: now + 30)
        actions = machine.handle(.closed(connection: 5, error: nil), now: now + 31)
        #expect(Self.retryIn(actions) == [4])
    }

    static let firstBlock = "retry: 2000\n: heartbeat 15\n\n"
    static func notFound(_ feed: String) -> String {
        "event: notfound\ndata: {\"feed\":\"\(feed)\",\"error\":\"not found\",\"detail\":\"no feed named \(feed)\"}\n\n"
    }
    static func retryIn(_ actions: [StreamMachine.Action]) -> [Double] {
        actions.compactMap { if case .emit(.connection(.disconnected(_, let delay))) = $0 { delay } else { nil } }
    }

    /// On the multi-feed route a feed not found backs off on its own count: the batches of a busy
    /// feed on the same stream (and the streams reopened to retry it) do not start it again.
    @Test func feedNotFoundBacksOffOnItsOwnCount() {
        let home = Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: home@ds1")
        var (machine, _) = Self.running(Self.firstBlock, home, Self.notFound("week"), route: .multi(["home", "week"]))
        var now = 0.0, connection = 1, version = 7, notFoundAt = 0.0
        var waited: [Double] = []
        while waited.count < 6 {
            now = min(machine.nextDeadline!, now + 1)
            // home is busy: a batch every second.
            var actions = machine.handle(.bytes(connection: connection, Array(Self.batch(from: version, idPrefix: "home@").utf8)), now: now)
            version += 1
            actions += machine.handle(.timer, now: now)
            guard let request = Self.requests(actions).first else { continue }
            waited.append(now - notFoundAt)
            #expect(request.query.map(\.value) == ["home@ds1.aaaa.\(version)", "week"])
            connection += 1
            _ = machine.handle(.opened(connection: connection), now: now)
            _ = machine.handle(.bytes(connection: connection, Array((Self.firstBlock + Self.notFound("week")).utf8)), now: now)
            notFoundAt = now
        }
        #expect(waited == [2, 4, 8, 16, 30, 30])
    }

    /// Silence for 2.5 announced heartbeat intervals: the stream is taken as dead.
    @Test func stalledStreamIsDetected() {
        var (machine, _) = Self.running("retry: 2000\n: heartbeat 2\n\n", Self.snapshot7)
        #expect(machine.heartbeat == 2)
        #expect(machine.nextDeadline == 5)
        var actions = machine.handle(.bytes(connection: 1, Array(": heartbeat\n\n".utf8)), now: 4)
        #expect(machine.nextDeadline == 9)
        actions = machine.handle(.timer, now: 9)
        #expect(actions.contains { if case .emit(.connection(.stalled(silence: 5))) = $0 { true } else { false } })
        #expect(actions.contains { if case .cancel(id: 1) = $0 { true } else { false } })
    }

    @Test func unauthorizedAsksForATokenThenResumes() {
        var machine = StreamMachine(route: .single("home"), token: "old", jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        var actions = machine.handle(.refusedConnection(connection: 1, status: 401, body: Array(#"{"error":"unauthorized","detail":"expired"}"#.utf8)), now: 0)
        #expect(actions.contains { if case .emit(.unauthorized(let problem)) = $0 { problem.detail == "expired" && problem.status == 401 } else { false } })
        #expect(actions.contains { if case .askForToken = $0 { true } else { false } })
        // The fresh token is used after the refusal's backoff (2 s), not at once.
        actions = machine.handle(.token("fresh"), now: 1)
        #expect(Self.requests(actions).isEmpty)
        #expect(machine.nextDeadline == 2)
        actions = machine.handle(.timer, now: 2)
        #expect(Self.requests(actions).map(\.token) == ["fresh"])
    }

    /// A hook that answers at once with a token the server keeps refusing: the client backs off
    /// (2, 4, 8 s after each refusal) instead of looping.
    @Test func refusedFreshTokensBackOff() {
        var machine = StreamMachine(route: .single("home"), token: "old", jitter: { 0 })
        var now = 0.0
        var attempts: [Double] = []
        var actions = machine.handle(.start, now: now)
        for id in 1...4 {
            if !Self.requests(actions).isEmpty { attempts.append(now) }
            actions = machine.handle(.refusedConnection(connection: id, status: 401, body: Array(#"{"error":"unauthorized","detail":"revoked"}"#.utf8)), now: now)
            #expect(actions.contains { if case .askForToken = $0 { true } else { false } })
            actions = machine.handle(.token("still-refused"), now: now)
            #expect(Self.requests(actions).isEmpty)
            now = machine.nextDeadline!
            actions = machine.handle(.timer, now: now)
        }
        #expect(attempts == [0, 2, 6, 14])
        #expect(Self.requests(actions).map(\.token) == ["still-refused"])
    }

    /// A fresh token arriving while a connection is being made (the other feeds reconnecting) cancels
    /// that connection; the new one lists every feed with the new token.
    @Test func freshTokenCancelsTheConnectionInProgress() {
        let home = Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: home@ds1")
        let expired = "event: unauthorized\ndata: {\"feed\":\"week\",\"error\":\"token expired\",\"detail\":\"d\"}\n\n"
        var (machine, actions) = Self.running(home, expired, route: .multi(["home", "week"]))
        #expect(actions.contains { if case .askForToken = $0 { true } else { false } })
        _ = machine.handle(.closed(connection: 1, error: "reset"), now: 1)
        actions = machine.handle(.timer, now: machine.nextDeadline!)
        #expect(Self.requests(actions).first?.query.map(\.value) == ["home@ds1.aaaa.7"])
        #expect(actions.contains { if case .connect(id: 2, _) = $0 { true } else { false } })
        actions = machine.handle(.token("fresh"), now: 3.5)
        #expect(actions.contains { if case .cancel(id: 2) = $0 { true } else { false } })
        #expect(Self.requests(actions).map(\.token) == ["fresh"])
        #expect(Self.requests(actions).first?.query.map(\.value) == ["home@ds1.aaaa.7", "week"])
        // The cancelled connection's late answer is ignored.
        #expect(machine.handle(.opened(connection: 2), now: 3.6).isEmpty)
        // A token when no feed waits for one reopens nothing; the next connection carries it.
        _ = machine.handle(.opened(connection: 3), now: 4)
        #expect(Self.requests(machine.handle(.token("newer"), now: 5)).isEmpty)
        #expect(machine.token == "newer")
    }

    @Test func expiredTokenEventWithoutAFreshTokenFinishes() {
        var (machine, _) = Self.running(Self.snapshot7)
        var actions = machine.handle(.bytes(connection: 1, Array("event: unauthorized\ndata: {\"feed\":\"home\",\"error\":\"token expired\",\"detail\":\"d\"}\n\n".utf8)), now: 1)
        #expect(actions.contains { if case .emit(.unauthorized(let problem)) = $0 { problem.error == "token expired" } else { false } })
        actions = machine.handle(.token(nil), now: 1)
        #expect(actions.contains { if case .finish = $0 { true } else { false } })
    }

    @Test(arguments: [(403, "forbidden"), (404, "notFound"), (503, "serverError")])
    func refusedStatusesAreTypedEvents(_ status: Int, _ kind: String) {
        var machine = StreamMachine(route: .single("home"), token: nil, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        let actions = machine.handle(.refusedConnection(connection: 1, status: status, body: Array(#"{"error":"e","detail":"d"}"#.utf8)), now: 0)
        let kinds: [String] = actions.compactMap {
            switch $0 {
            case .emit(.forbidden): "forbidden"
            case .emit(.notFound): "notFound"
            case .emit(.serverError): "serverError"
            default: nil
            }
        }
        #expect(kinds == [kind])
        if status != 403 { #expect(machine.nextDeadline != nil) }  // retried with backoff
    }

    @Test func multiFeedResumesEachFeedAndRetriesARefusedOne() {
        var (machine, actions) = Self.running(Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: home@ds1"),
                                              "event: notfound\ndata: {\"feed\":\"week\",\"error\":\"not found\",\"detail\":\"no feed named week\"}\n\n",
                                              Self.batch(from: 7, idPrefix: "home@"), route: .multi(["home", "week"]))
        #expect(Self.requests(actions).first?.query == [QueryParameter(name: "feed", value: "home"), QueryParameter(name: "feed", value: "week")])
        #expect(Self.updates(actions).map(\.eventID) == ["ds1.aaaa.7", "ds1.aaaa.8"])
        #expect(actions.contains { if case .emit(.notFound(let problem)) = $0 { problem.feed == "week" } else { false } })
        // At the retry time the stream is opened again, home from its position, week without one.
        let deadline = machine.nextDeadline!
        actions = machine.handle(.timer, now: deadline)
        #expect(Self.requests(actions).first?.query == [QueryParameter(name: "feed", value: "home@ds1.aaaa.8"), QueryParameter(name: "feed", value: "week")])
    }

    @Test func cachedSnapshotIsYieldedStaleThenResumed() throws {
        let snapshot = try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","items":[]}]}"#.utf8))
        var machine = StreamMachine(route: .single("home"), token: nil,
                                    cached: ["home": FeedCursor(cached: snapshot, history: "aaaa", version: 3, eventID: "ds1.aaaa.3")], jitter: { 0 })
        let actions = machine.handle(.start, now: 0)
        #expect(Self.updates(actions).map(\.change) == [.full(.cached)])
        #expect(Self.updates(actions).first?.isStale == true)
        #expect(Self.requests(actions).map(\.lastEventID) == ["ds1.aaaa.3"])
    }

    /// A cached snapshot the server resumes at its id with nothing missed (no event for the feed): once
    /// the grace after the stream opened has passed, it is yielded again as current (not stale), once.
    /// A cache resumed with missed batches needs no such update: the batches are live.
    @Test func cachedSnapshotResumedAtItsIDIsConfirmed() throws {
        let snapshot = try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":1}]}]}"#.utf8))
        let cached = ["home": FeedCursor(cached: snapshot, history: "aaaa", version: 3, eventID: "ds1.aaaa.3")]
        var machine = StreamMachine(route: .single("home"), token: nil, cached: cached, jitter: { 0 })
        var actions = machine.handle(.start, now: 0)
        #expect(Self.updates(actions).map(\.isStale) == [true])
        actions = machine.handle(.opened(connection: 1), now: 1)
        actions += machine.handle(.bytes(connection: 1, Array(Self.firstBlock.utf8)), now: 1)
        #expect(Self.updates(actions).isEmpty)
        #expect(machine.nextDeadline == 3)
        actions = machine.handle(.timer, now: 3)
        let confirmed = Self.updates(actions)
        #expect(confirmed.map(\.change) == [.full(.resync)])
        #expect(confirmed.first?.isStale == false)
        #expect(confirmed.first?.version == 3 && confirmed.first?.eventID == "ds1.aaaa.3")
        #expect(Self.updates(machine.handle(.timer, now: 4)).isEmpty)

        var resumed = StreamMachine(route: .single("home"), token: nil, cached: cached, jitter: { 0 })
        _ = resumed.handle(.start, now: 0)
        actions = resumed.handle(.opened(connection: 1), now: 1)
        actions += resumed.handle(.bytes(connection: 1, Array((Self.firstBlock + Self.batch(from: 3)).utf8)), now: 1)
        #expect(Self.updates(actions).map(\.change) == [.batch])
        #expect(Self.updates(resumed.handle(.timer, now: 3)).isEmpty)
    }

    /// A cached snapshot resumed at its id while the server says the feed is unavailable (it answered
    /// from the state it holds, maybe behind) stays stale.
    @Test func cachedSnapshotResumedDuringAnOutageStaysStale() throws {
        let snapshot = try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":1}]}]}"#.utf8))
        let cached = ["home": FeedCursor(cached: snapshot, history: "aaaa", version: 3, eventID: "ds1.aaaa.3")]
        var machine = StreamMachine(route: .single("home"), token: nil, cached: cached, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        var actions = machine.handle(.opened(connection: 1), now: 1)
        actions += machine.handle(.bytes(connection: 1, Array((Self.firstBlock + Self.unavailable()).utf8)), now: 1)
        #expect(Self.updates(actions).isEmpty)
        actions = machine.handle(.timer, now: 3)
        #expect(Self.updates(actions).isEmpty, "not confirmed while unavailable")
        actions = machine.handle(.bytes(connection: 1, Array(Self.batch(from: 3).utf8)), now: 4)
        #expect(Self.updates(actions).map(\.isStale) == [false], "the next batch makes it current")
    }

    // MARK: Store outage (`event: unavailable` / `available`, issue 26)

    static func unavailable(_ feed: String = "home", detail: String = "redis: connection refused") -> String {
        "event: unavailable\ndata: {\"feed\":\"\(feed)\",\"detail\":\"\(detail)\"}\n\n"
    }
    static func available(_ feed: String = "home") -> String { "event: available\ndata: {\"feed\":\"\(feed)\"}\n\n" }

    /// The outage events the machine emitted, as `unavailable:FEED:DETAIL` and `available:FEED`.
    static func outages(_ actions: [StreamMachine.Action]) -> [String] {
        actions.compactMap { action -> String? in
            switch action {
            case .emit(.unavailable(let feed, let detail)): "unavailable:\(feed):\(detail)"
            case .emit(.available(let feed)): "available:\(feed)"
            default: nil
            }
        }
    }

    /// Reported once each way; the position stays the last snapshot's or batch's, and batches after
    /// `available` apply as usual.
    @Test func outageIsReportedOnceAndLeavesThePosition() {
        var (machine, actions) = Self.running(Self.snapshot7, Self.unavailable(), Self.unavailable(detail: "again"))
        #expect(Self.outages(actions) == ["unavailable:home:redis: connection refused"])
        #expect(machine.isUnavailable("home"))
        #expect(machine.cursor(of: "home")?.eventID == "ds1.aaaa.7")
        #expect(machine.cursor(of: "home")?.version == 7)
        #expect(actions.filter { if case .store = $0 { true } else { false } }.count == 1)  // the snapshot's only
        actions = machine.handle(.bytes(connection: 1, Array((Self.available() + Self.available() + Self.batch(from: 7)).utf8)), now: 1)
        #expect(Self.outages(actions) == ["available:home"])
        #expect(!machine.isUnavailable("home"))
        #expect(Self.updates(actions).map(\.version) == [8])
        #expect(machine.cursor(of: "home")?.eventID == "ds1.aaaa.8")
    }

    /// An `unavailable` event carries no id, so the SSE last-event-id it inherits is the previous
    /// event's: it must not move the resume position, on either route.
    @Test func reconnectDuringAnOutageResumesFromTheLastBatch() {
        var (machine, _) = Self.running(Self.snapshot7, Self.batch(from: 7), Self.unavailable())
        let actions = machine.handle(.closed(connection: 1, error: "reset"), now: 5)
        #expect(Self.outages(actions).isEmpty)  // the outage is not over because the stream ended
        let reconnect = machine.handle(.timer, now: machine.nextDeadline!)
        #expect(Self.requests(reconnect).map(\.lastEventID) == ["ds1.aaaa.8"])

        var multi = Self.running(Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: home@ds1"),
                                 Self.unavailable("week"), Self.unavailable("home"), route: .multi(["home", "week"])).0
        #expect(multi.isUnavailable("week") && multi.isUnavailable("home"))
        _ = multi.handle(.closed(connection: 1, error: nil), now: 1)
        let again = multi.handle(.timer, now: multi.nextDeadline!)
        #expect(Self.requests(again).first?.query == [QueryParameter(name: "feed", value: "home@ds1.aaaa.7"), QueryParameter(name: "feed", value: "week")])
    }

    /// After a reconnect the server repeats an outage that goes on (no second `.unavailable`, no
    /// `.available` in between); one it does not repeat within the grace is over.
    @Test func newStreamConfirmsOrEndsTheOutage() {
        var (machine, _) = Self.running(Self.snapshot7, Self.unavailable())
        // The outage goes on: the new stream sends the held state, then `unavailable` again.
        _ = machine.handle(.closed(connection: 1, error: nil), now: 10)
        var actions = machine.handle(.timer, now: machine.nextDeadline!)
        actions += machine.handle(.opened(connection: 2), now: 13)
        #expect(machine.nextDeadline == 15)  // the grace (2 s), before the stall check
        actions += machine.handle(.bytes(connection: 2, Array(Self.unavailable().utf8)), now: 13.1)
        actions += machine.handle(.timer, now: 15)
        #expect(Self.outages(actions).isEmpty)
        #expect(machine.isUnavailable("home"))
        // The store came back while disconnected: the next stream does not repeat it; after the grace it is over.
        _ = machine.handle(.closed(connection: 2, error: nil), now: 20)
        let t = machine.nextDeadline!
        actions = machine.handle(.timer, now: t)
        actions += machine.handle(.opened(connection: 3), now: t + 1)
        actions += machine.handle(.bytes(connection: 3, Array(Self.batch(from: 7).utf8)), now: t + 1.5)
        #expect(Self.updates(actions).map(\.version) == [8])
        #expect(Self.outages(actions).isEmpty)
        actions = machine.handle(.timer, now: t + 2.5)
        #expect(Self.outages(actions).isEmpty)
        actions = machine.handle(.timer, now: t + 3)
        #expect(Self.outages(actions) == ["available:home"])
        #expect(!machine.isUnavailable("home"))
        #expect(machine.nextDeadline == t + 1.5 + 15 * 2.5)  // only the stall check is left
    }

    /// `503 {"error":"redis unavailable"}` on the single-feed route (a feed the instance does not hold
    /// during an outage): retried, and reported as an outage; a 503 for another reason is not.
    @Test func unavailableAnswerIsAnOutage() {
        var machine = StreamMachine(route: .single("home"), token: nil, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        var actions = machine.handle(.refusedConnection(connection: 1, status: 503, body: Array(#"{"error":"redis unavailable","detail":"connection refused"}"#.utf8)), now: 0)
        #expect(Self.outages(actions) == ["unavailable:home:connection refused"])
        #expect(actions.contains { if case .emit(.serverError) = $0 { true } else { false } })
        #expect(machine.nextDeadline != nil)
        var other = StreamMachine(route: .single("home"), token: nil, jitter: { 0 })
        _ = other.handle(.start, now: 0)
        actions = other.handle(.refusedConnection(connection: 1, status: 503, body: Array(#"{"error":"too many connections"}"#.utf8)), now: 0)
        #expect(Self.outages(actions).isEmpty)
    }

    /// Steps the machine's timer until it opens a connection; the time and the request.
    static func nextConnection(_ machine: inout StreamMachine, from now: Double) -> (Double, StreamRequest)? {
        var now = now
        for _ in 0..<20 {
            guard let deadline = machine.nextDeadline else { return nil }
            now = max(now, deadline)
            if let request = requests(machine.handle(.timer, now: now)).first { return (now, request) }
        }
        return nil
    }

    /// Multi-feed route: `unavailable` for a feed before any event of it on the stream is a feed the
    /// server could not load (not followed on that stream). It is reported once and retried with its
    /// own backoff by reopening the stream; once the server loads it, its snapshot follows and the
    /// outage ends.
    @Test func feedTheServerCouldNotLoadIsRetried() {
        let home = Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: home@ds1")
        var (machine, actions) = Self.running(Self.firstBlock, home, Self.unavailable("week"), route: .multi(["home", "week"]))
        #expect(Self.outages(actions) == ["unavailable:week:redis: connection refused"])
        #expect(machine.isUnavailable("week"))
        guard let (first, request) = Self.nextConnection(&machine, from: 0) else { Issue.record("week is not retried"); return }
        #expect(first == 2)
        #expect(request.query.map(\.value) == ["home@ds1.aaaa.7", "week"])
        // Still not loadable: not reported again, retried after 4 s.
        actions = machine.handle(.opened(connection: 2), now: first)
        actions += machine.handle(.bytes(connection: 2, Array((Self.firstBlock + Self.unavailable("week")).utf8)), now: first)
        #expect(Self.outages(actions).isEmpty)
        guard let (second, _) = Self.nextConnection(&machine, from: first) else { Issue.record("week is not retried"); return }
        #expect(second == first + 4)
        // Loaded now: its snapshot, then (not repeated within the grace) the outage is over.
        actions = machine.handle(.opened(connection: 3), now: second)
        let week = Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: week@ds1").replacingOccurrences(of: "\"home\"", with: "\"week\"")
        actions += machine.handle(.bytes(connection: 3, Array((Self.firstBlock + week).utf8)), now: second)
        #expect(Self.updates(actions).map(\.feed) == ["week"])
        actions = machine.handle(.timer, now: second + 2)
        #expect(Self.outages(actions) == ["available:week"])
        #expect(!machine.isUnavailable("week"))
    }

    /// A feed the server holds, resumed at its current version, also gets `unavailable` first; the
    /// server's `available` for it shows it is followed: it is taken back without reopening the stream.
    @Test func availableTakesBackAFeedFollowedAfterAll() {
        let home = Self.snapshot7.replacingOccurrences(of: "id: ds1", with: "id: home@ds1")
        var (machine, _) = Self.running(Self.firstBlock, home, Self.unavailable("week"), route: .multi(["home", "week"]))
        let actions = machine.handle(.bytes(connection: 1, Array(Self.available("week").utf8)), now: 1)
        #expect(Self.outages(actions) == ["available:week"])
        #expect(Self.requests(machine.handle(.timer, now: 2)).isEmpty)
        #expect(machine.nextDeadline == 1 + 15 * 2.5)
    }

    /// A deleted feed's outage ends with it (silently: `.deleted` says more).
    @Test func deletedFeedEndsItsOutage() {
        let (machine, actions) = Self.running(Self.snapshot7, Self.unavailable(), "event: deleted\ndata: {\"feed\":\"home\"}\n\n")
        #expect(Self.outages(actions) == ["unavailable:home:redis: connection refused"])
        #expect(!machine.isUnavailable("home"))
    }
}
