import DiffStream
import DiffStreamJSON
import Testing
@testable import DiffStreamClient

/// The cacheable log's reads, driven without sockets: each read's request, its answer's events, and what
/// comes next (the next read, a start over, a backoff, a token).
struct PollMachineTests {
    static let start = #"{"feed":"home","history":"aaaa","snapshot":{"feed":"home","history":"aaaa","version":7,"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"k","model":1}]}]},"batches":[],"next":"ds1.aaaa.7","upToDate":false,"cursor":"100"}"#

    static func batch(from: Int, history: String = "aaaa") -> String {
        #"{"feed":"home","history":"\#(history)","from":\#(from),"version":\#(from + 1),"ops":[{"op":"update","item":"a","kind":"k","model":\#(from + 1)}]}"#
    }

    static func page(_ batches: [String], next: String, upToDate: Bool, cursor: String = "100") -> String {
        #"{"feed":"home","history":"aaaa","batches":[\#(batches.joined(separator: ","))],"next":"\#(next)","upToDate":\#(upToDate),"cursor":"\#(cursor)"}"#
    }

    static func requests(_ actions: [PollMachine.Action]) -> [StreamRequest] {
        actions.compactMap { if case .connect(_, let request) = $0 { request } else { nil } }
    }

    static func updates(_ actions: [PollMachine.Action]) -> [WireFeedUpdate] {
        actions.compactMap { if case .emit(.update(let update)) = $0 { update } else { nil } }
    }

    static func log(_ query: [(String, String)] = []) -> StreamRequest {
        StreamRequest(path: "/feeds/home/log", query: query.map { QueryParameter(name: $0.0, value: $0.1) }, lastEventID: nil, token: nil, kind: .log)
    }

    /// Answers the read in progress (read `id`) with `status` and `body`.
    static func answer(_ machine: inout PollMachine, id: Int, status: Int = 200, _ body: String, now: Double = 0) -> [PollMachine.Action] {
        if status != 200 { return machine.handle(.refusedConnection(connection: id, status: status, body: Array(body.utf8)), now: now) }
        var actions = machine.handle(.opened(connection: id), now: now)
        actions += machine.handle(.bytes(connection: id, Array(body.utf8)), now: now)
        actions += machine.handle(.closed(connection: id, error: nil), now: now)
        return actions
    }

    @Test func startThenCatchUpThenLive() {
        var machine = PollMachine(feed: "home", token: nil, jitter: { 0 })
        var actions = machine.handle(.start, now: 0)
        #expect(Self.requests(actions) == [Self.log()])
        actions = Self.answer(&machine, id: 1, Self.start)
        #expect(Self.updates(actions).map(\.change) == [.full(.first)])
        #expect(Self.updates(actions).first?.eventID == "ds1.aaaa.7")
        #expect(Self.requests(actions) == [Self.log([("after", "ds1.aaaa.7")])])
        actions = Self.answer(&machine, id: 2, Self.page([Self.batch(from: 7), Self.batch(from: 8)], next: "ds1.aaaa.9", upToDate: true))
        #expect(Self.updates(actions).map(\.version) == [8, 9])
        #expect(Self.updates(actions).map(\.eventID) == ["", "ds1.aaaa.9"])  // the answer names where it ends
        #expect(Self.requests(actions) == [Self.log([("after", "ds1.aaaa.9"), ("live", "1"), ("cursor", "100")])])
        actions = Self.answer(&machine, id: 3, Self.page([], next: "ds1.aaaa.9", upToDate: true, cursor: "101"))
        #expect(Self.updates(actions).isEmpty)
        #expect(Self.requests(actions) == [Self.log([("after", "ds1.aaaa.9"), ("live", "1"), ("cursor", "101")])])
        #expect(machine.cursor.eventID == "ds1.aaaa.9")
    }

    /// A gap, another history, or a 409: the feed starts over from the snapshot, never applying across it.
    @Test(arguments: [
        (200, Self.page([Self.batch(from: 9)], next: "ds1.aaaa.10", upToDate: true)),
        (200, Self.page([Self.batch(from: 7, history: "bbbb")], next: "ds1.bbbb.8", upToDate: true)),
        (409, #"{"error":"start over","detail":"not in the replay window"}"#),
    ])
    func startsOver(status: Int, body: String) {
        var machine = PollMachine(feed: "home", token: nil, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        _ = Self.answer(&machine, id: 1, Self.start)
        let actions = Self.answer(&machine, id: 2, status: status, body)
        #expect(Self.updates(actions).isEmpty)
        #expect(actions.contains { if case .emit(.resyncing(feed: "home", _)) = $0 { true } else { false } })
        #expect(Self.requests(actions) == [Self.log()])
        // Again at once: a cache may still hold the old snapshot, so the next start over waits.
        let again = Self.answer(&machine, id: 3, status: 409, "{}")
        #expect(Self.requests(again).isEmpty)
        #expect(machine.nextDeadline == 2)
    }

    @Test func deletedAfterFollowingNotFoundBefore() {
        var machine = PollMachine(feed: "home", token: nil, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        var actions = Self.answer(&machine, id: 1, status: 404, #"{"error":"not found","detail":"no feed named 'home'"}"#)
        #expect(actions.contains { if case .emit(.notFound(let problem)) = $0 { problem.status == 404 } else { false } })
        #expect(machine.nextDeadline == 2)
        actions = machine.handle(.timer, now: 2)
        #expect(Self.requests(actions) == [Self.log()])
        _ = Self.answer(&machine, id: 2, Self.start, now: 2)
        actions = Self.answer(&machine, id: 3, status: 404, "{}", now: 2)
        #expect(actions.contains { if case .emit(.deleted(feed: "home")) = $0 { true } else { false } })
    }

    @Test func failedReadIsMadeAgainFromTheSamePosition() {
        var machine = PollMachine(feed: "home", token: nil, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        _ = Self.answer(&machine, id: 1, Self.start)
        var actions = machine.handle(.closed(connection: 2, error: "connection refused"), now: 1)
        #expect(actions.contains { if case .emit(.connection(.disconnected(_, let retryIn))) = $0 { retryIn == 2 } else { false } })
        actions = machine.handle(.timer, now: 3)
        #expect(Self.requests(actions) == [Self.log([("after", "ds1.aaaa.7")])])
        // A read with no answer at all is given up after the read timeout.
        actions = machine.handle(.timer, now: 3 + 45)
        #expect(actions.contains { if case .cancel(id: 3) = $0 { true } else { false } })
        let deadline: Double? = 52  // the second failure in a row: 4 s after 48
        #expect(machine.nextDeadline == deadline, "\(String(describing: machine.nextDeadline.map { $0 - 52 }))")
    }

    @Test func refusedAsksForATokenAndReadsWithIt() {
        var machine = PollMachine(feed: "home", token: "old", jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        var actions = Self.answer(&machine, id: 1, status: 401, #"{"error":"unauthorized"}"#)
        #expect(actions.contains { if case .askForToken = $0 { true } else { false } })
        actions = machine.handle(.token("new"), now: 5)
        #expect(Self.requests(actions).map(\.token) == ["new"])
        actions = Self.answer(&machine, id: 2, status: 403, "{}", now: 5)
        actions = machine.handle(.token(nil), now: 6)
        #expect(actions.contains { if case .finish = $0 { true } else { false } })
    }

    @Test func aBadRequestEnds() {
        var machine = PollMachine(feed: "home", token: nil, jitter: { 0 })
        _ = machine.handle(.start, now: 0)
        let actions = Self.answer(&machine, id: 1, status: 400, #"{"error":"bad query"}"#)
        #expect(actions.contains { if case .finish = $0 { true } else { false } })
        #expect(machine.isFinished)
    }

    @Test func cachedFeedIsShownThenReadAfter() {
        var cursor = FeedCursor()
        _ = cursor.receiveSnapshot(WireSnapshot(), history: "aaaa", version: 7, eventID: "ds1.aaaa.7")
        let cached = FeedCursor(cached: cursor.snapshot!, history: "aaaa", version: 7, eventID: "ds1.aaaa.7")
        var machine = PollMachine(feed: "home", token: nil, cached: cached, jitter: { 0 })
        let actions = machine.handle(.start, now: 0)
        #expect(Self.updates(actions).map(\.change) == [.full(.cached)])
        #expect(Self.requests(actions) == [Self.log([("after", "ds1.aaaa.7")])])
    }
}
