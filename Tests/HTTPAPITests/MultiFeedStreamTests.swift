import TestSupport
import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import HTTPCore
import Testing

/// `GET /events?feed=…`, many feeds on one stream, through the transport seam in memory: one
/// ``MemorySink`` is the connection, multiplexed into a slot per feed.
struct MultiFeedStreamTests {
    typealias F = TokenFixtures
    let base = FeedStreamTests()

    func request(_ api: FeedAPI, _ target: String, headers: HTTPHeaders = ["Host": "x"]) async -> HTTPResponse {
        await api.handle(HTTPRequest(method: "GET", target: target, headers: headers))
    }

    func body(_ response: HTTPResponse) -> JSONValue? {
        guard case .bytes(let bytes) = response.body else { return nil }
        return try? JSONParser.parse(bytes)
    }

    func member(_ value: JSONValue?, _ key: String) -> JSONValue? {
        guard case .object(let members)? = value else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// A write with a token that may write every feed (the JWT servers have a write credential).
    func put(_ api: FeedAPI, _ feed: String, items: [String]) async throws {
        let token = try await F.hs256(F.claims(publish: ["*"]))
        let status = await base.put(api, feed, items: items, headers: ["Host": "x", "Authorization": "Bearer " + token])
        #expect(status == .ok || status == .created)
    }

    /// The next `count` events of `sink` (fewer if it ends first).
    func take(_ sink: MemorySink, _ count: Int) async -> [MemorySink.Event] {
        var events: [MemorySink.Event] = []
        for _ in 0..<count {
            guard let event = await sink.next() else { break }
            events.append(event)
        }
        return events
    }

    func summary(_ event: MemorySink.Event?) -> String {
        guard let event else { return "end" }
        let feed = base.field(event, "feed").flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "?"
        let version = base.field(event, "version").flatMap { if case .number(let n) = $0 { Int(n) } else { nil } }
        return "\(event.type) \(feed)" + (version.map { " \($0)" } ?? "")
    }

    @Test func oneStreamCarriesEveryListedFeedInOrderWithTheFeedInEachID() async throws {
        let api = try await base.makeAPI()
        for feed in ["a", "b", "c"] { _ = await base.put(api, feed, items: [feed]) }
        let sink = try await base.subscribe(api, "/events?feed=c&feed=a&feed=b")
        let first = await take(sink, 3)
        #expect(first.map(summary) == ["snapshot c 1", "snapshot a 1", "snapshot b 1"])
        #expect(sink.text.hasPrefix("retry: 2000\n: heartbeat 15\n\nevent: snapshot\nid: c@ds1."))
        for event in first {
            let feed = try #require(base.field(event, "feed").flatMap { if case .string(let s) = $0 { s } else { nil } })
            let id = try #require(event.id)
            #expect(id.hasPrefix(feed + "@"))
            let history = try #require(EventID(String(id.dropFirst(feed.count + 1)))?.history)
            #expect(base.field(event, "history") == .string(history))
        }
        _ = await base.put(api, "b", items: ["b", "x"])
        _ = await base.put(api, "a", items: [])
        let batches = await take(sink, 2)
        #expect(batches.map(summary) == ["batch b 2", "batch a 2"])
        #expect(batches.allSatisfy { $0.id?.hasSuffix(".2") == true } && batches[0].id?.hasPrefix("b@ds1.") == true)
        let feed = try #require(try await api.registry.read("a"))
        #expect(await feed.subscriberCount == 1, "one subscriber of each feed it carries")
    }

    @Test func eachFeedResumesOnItsOwn() async throws {
        let api = try await base.makeAPI()
        for feed in ["current", "old", "foreign", "bad", "none"] { _ = await base.put(api, feed, items: ["1"]) }
        let first = try await base.subscribe(api, "/events?feed=current&feed=old&feed=foreign&feed=bad&feed=none")
        var ids: [String: String] = [:]
        for event in await take(first, 5) { if let id = event.id { ids[String(id.prefix { $0 != "@" })] = String(id.drop { $0 != "@" }.dropFirst()) } }
        first.disconnect()
        for version in 2...4 {
            for feed in ["old", "foreign", "bad", "none"] { _ = await base.put(api, feed, items: (1...version).map(String.init)) }
        }
        let current = try #require(ids["current"]), old = try #require(ids["old"])
        let target = "/events?feed=current@\(current)&feed=old%40\(old)&feed=foreign@ds1.00000000000000ff.2&feed=bad@nonsense&feed=none"
        let sink = try await base.subscribe(api, target)
        #expect(await take(sink, 6).map(summary) == ["batch old 2", "batch old 3", "batch old 4", "snapshot foreign 4", "snapshot bad 4", "snapshot none 4"],
                "the current feed gets nothing, the old one its missed batches, the others a snapshot, in the order listed")
        _ = await base.put(api, "current", items: ["1", "2"])
        #expect(await take(sink, 1).map(summary) == ["batch current 2"])
    }

    @Test func lastEventIDNamingAListedFeedOverridesItsPosition() async throws {
        let api = try await base.makeAPI()
        _ = await base.put(api, "a", items: ["1"])
        _ = await base.put(api, "b", items: ["1"])
        let first = try await base.subscribe(api, "/events?feed=a&feed=b")
        let ids = await take(first, 2).compactMap(\.id)
        first.disconnect()
        _ = await base.put(api, "a", items: ["1", "2"])
        _ = await base.put(api, "b", items: ["1", "2"])
        // The URL holds no position for a; the header holds a's: only a resumes from it.
        let sink = try await base.subscribe(api, "/events?feed=a&feed=b", headers: ["Host": "x", "Last-Event-ID": ids[0]])
        #expect(await take(sink, 2).map(summary) == ["batch a 2", "snapshot b 2"])
        // A header naming no listed feed is ignored.
        let other = try await base.subscribe(api, "/events?feed=a", headers: ["Host": "x", "Last-Event-ID": "zzz@" + ids[0].dropFirst(2)])
        #expect(await take(other, 1).map(summary) == ["snapshot a 2"])
    }

    @Test func refusedFeedsAreRefusedInsideTheStreamAndTheOthersGoOn() async throws {
        let api = try await base.makeAPI(jwt: true)
        for feed in ["mine", "theirs"] { try await put(api, feed, items: ["1"]) }
        let token = try await F.hs256(F.claims(subscribe: ["mine", "gone"]))
        let sink = try await base.subscribe(api, "/events?feed=theirs&feed=mine&feed=gone&authorization=\(token)")
        let events = await take(sink, 3)
        #expect(events.map(\.type) == ["forbidden", "snapshot", "notfound"])
        #expect(events[0].id == nil && base.field(events[0], "feed") == "theirs" && base.field(events[0], "error") == "forbidden")
        #expect(events[2].data == #"{"feed":"gone","error":"not found","detail":"no feed named gone"}"#)
        try await put(api, "mine", items: ["1", "2"])
        #expect(await take(sink, 1).map(summary) == ["batch mine 2"])
    }

    @Test func withoutATokenPrivateFeedsAreUnauthorizedInsideTheStream() async throws {
        let registry = FeedRegistry(replayLimit: 8, transport: MemoryBroadcaster())
        var options = FeedAPI.Options()
        options.verifier = try await JWTVerifier(hmacSecret: F.secret)
        options.privateReads = true
        options.publicFeeds = ["lobby"]
        let api = FeedAPI(registry: registry, hosted: nil, files: nil, options: options, serverMetrics: { nil })
        for feed in ["lobby", "inbox"] { try await put(api, feed, items: ["1"]) }
        let sink = try await base.subscribe(api, "/events?feed=inbox&feed=lobby")
        let events = await take(sink, 2)
        #expect(events.map(\.type) == ["unauthorized", "snapshot"])
        #expect(base.field(events[0], "error") == "token required" && events[0].id == nil)
    }

    @Test func whenEveryFeedIsRefusedTheRequestGetsAPlainStatus() async throws {
        let api = try await base.makeAPI(jwt: true)
        try await put(api, "theirs", items: ["1"])
        let token = try await F.hs256(F.claims(subscribe: ["mine"]))
        let auth: HTTPHeaders = ["Host": "x", "Authorization": "Bearer " + token]
        #expect(await request(api, "/events?feed=theirs&feed=other").status == .unauthorized, "no token at all")
        let mixed = await request(api, "/events?feed=theirs&feed=mine", headers: auth)
        #expect(mixed.status == .forbidden, "one forbidden, one missing")
        // Each feed's own refusal, as the stream would have sent it: the missing one can be retried.
        guard case .array(let feeds)? = member(body(mixed), "feeds") else { Issue.record("no feeds in \(String(describing: body(mixed)))"); return }
        #expect(feeds.map { member($0, "feed") } == [.string("theirs"), .string("mine")])
        #expect(feeds.map { member($0, "event") } == [.string("forbidden"), .string("notfound")])
        #expect(member(feeds[1], "error") == "not found" && member(feeds[1], "detail") == "no feed named mine")
        let missing = await request(api, "/events?feed=mine&feed=mine2", headers: ["Host": "x", "Authorization": "Bearer " + (try await F.hs256(F.claims(subscribe: ["mine*"])))])
        #expect(missing.status == .notFound)
        #expect(member(body(missing), "detail") == "no feed named 'mine', 'mine2'")
        let bad = await request(api, "/events?feed=mine", headers: ["Host": "x", "Authorization": "Bearer nope"])
        #expect(bad.status == .unauthorized && bad.headers["WWW-Authenticate"]?.contains("invalid_token") == true)
    }

    @Test(arguments: [
        ("/events", "no feed"), ("/events?lastEventId=x", "no feed"), ("/events?feed=a&feed=a", "duplicate feed"),
        ("/events?feed=a&feed=.hidden", "invalid feed"), ("/events?feed=a+b", "invalid feed"), ("/events?feed=", "invalid feed"),
    ])
    func badListsAre400(target: String, error: String) async throws {
        let api = try await base.makeAPI()
        let response = await request(api, target)
        #expect(response.status == .badRequest && member(body(response), "error") == .string(error))
    }

    @Test(arguments: [100, 101])
    func theFeedsPerStreamAreLimited(count: Int) async throws {
        let api = try await base.makeAPI()
        _ = await base.put(api, "f0", items: ["1"])
        let target = "/events?" + (0..<count).map { "feed=f\($0)" }.joined(separator: "&")
        let response = await request(api, target)
        if count <= 100 {
            #expect(response.status == .ok)
        } else {
            #expect(response.status == .badRequest)
            #expect(member(body(response), "limit") == "max-stream-feeds" && member(body(response), "value") == 100)
            #expect(member(body(response), "error") == "too many feeds")
        }
    }

    @Test func aSlowSubscriberGetsASnapshotOfEachFeedItFellBehindOn() async throws {
        let api = try await base.makeAPI()
        for feed in ["busy", "quiet"] { _ = await base.put(api, feed, items: ["1"]) }
        let opening = try await base.subscribe(api, "/events?feed=quiet")
        let quietID = try #require(await opening.next()?.id)
        opening.disconnect()
        let sink = try await base.subscribe(api, "/events?feed=busy&feed=" + quietID)  // quiet at its current position
        #expect(await take(sink, 1).map(summary) == ["snapshot busy 1"])
        sink.fallBehind()
        _ = await base.put(api, "busy", items: ["1", "2"])
        _ = await base.put(api, "busy", items: ["1", "2", "3"])
        sink.drain()
        #expect(await take(sink, 1).map(summary) == ["snapshot busy 3"], "caught up with a snapshot of the feed it missed")
        _ = await base.put(api, "quiet", items: ["2"])
        _ = await base.put(api, "busy", items: ["3"])
        #expect(await take(sink, 2).map(summary) == ["batch quiet 2", "batch busy 4"], "the quiet feed lost nothing: no snapshot")
    }

    /// Only what the connection dropped counts: a feed whose last event (its opening snapshot) went out
    /// before the overflow goes on without a snapshot.
    @Test func aFeedThatSentNothingSinceTheOverflowGetsNoSnapshot() async throws {
        let api = try await base.makeAPI()
        for feed in ["busy", "quiet"] { _ = await base.put(api, feed, items: ["1"]) }
        let sink = try await base.subscribe(api, "/events?feed=busy&feed=quiet")
        #expect(await take(sink, 2).map(summary) == ["snapshot busy 1", "snapshot quiet 1"])
        sink.fallBehind()
        _ = await base.put(api, "busy", items: ["1", "2"])
        sink.drain()
        #expect(await take(sink, 1).map(summary) == ["snapshot busy 2"])
        _ = await base.put(api, "quiet", items: ["2"])
        #expect(await take(sink, 1).map(summary) == ["batch quiet 2"], "quiet lost nothing: no snapshot")
    }

    /// A feed deleted while the connection is behind: the connection dropped its `deleted`, which is
    /// sent again once the stream drains; the other feeds go on.
    @Test func aFeedDeletedWhileTheStreamIsBehindIsToldOnceItDrains() async throws {
        let api = try await base.makeAPI()
        for feed in ["busy", "gone"] { _ = await base.put(api, feed, items: ["1"]) }
        let sink = try await base.subscribe(api, "/events?feed=busy&feed=gone")
        _ = await take(sink, 2)
        sink.fallBehind()
        _ = await base.put(api, "gone", items: ["1", "2"])
        #expect(await api.handle(HTTPRequest(method: "DELETE", target: "/feeds/gone", headers: ["Host": "x"])).status == .noContent)
        sink.drain()
        #expect(await take(sink, 1).map(summary) == ["deleted gone"])
        _ = await base.put(api, "busy", items: ["3"])
        #expect(await take(sink, 1).map(summary) == ["batch busy 2"], "busy lost nothing: no snapshot")
    }

    /// The last feed of a stream deleted while the connection is behind: the stream ends with its
    /// `deleted` (the connection dropped it, and will not drain again once it ends).
    @Test func theLastFeedDeletedWhileTheStreamIsBehindEndsItWithDeleted() async throws {
        let api = try await base.makeAPI()
        _ = await base.put(api, "gone", items: ["1"])
        let sink = try await base.subscribe(api, "/events?feed=gone")
        _ = await take(sink, 1)
        sink.fallBehind()
        _ = await base.put(api, "gone", items: ["1", "2"])
        #expect(await api.handle(HTTPRequest(method: "DELETE", target: "/feeds/gone", headers: ["Host": "x"])).status == .noContent)
        #expect(await take(sink, 1).map(summary) == ["deleted gone"])
        #expect(await sink.next() == nil, "and the stream ends")
    }

    /// A refusal the connection dropped (it fell behind while the feeds were opened) is sent again once
    /// it drains; one the connection wrote is not.
    @Test func aDroppedRefusalIsSentAgainAfterTheDrain() async {
        let connection = MemorySink()
        let multiplexer = FeedMultiplexer(connection)
        let slot = multiplexer.makeSlot(feed: "a")
        slot.onResync { $0.resume(with: EventPayload("event: snapshot\nid: a@3\ndata: {}\n\n")) }
        multiplexer.refuse(EventPayload("event: forbidden\ndata: {\"feed\":\"b\"}\n\n"))  // written
        connection.fallBehind()
        slot.send(EventPayload("event: batch\nid: a@2\ndata: {}\n\n"))  // dropped
        multiplexer.refuse(EventPayload("event: notfound\ndata: {\"feed\":\"c\"}\n\n"))  // dropped
        multiplexer.finishOpening()
        connection.drain()
        #expect(await connection.next()?.type == "forbidden")
        #expect(await connection.next()?.type == "notfound")
        #expect(await connection.next()?.id == "a@3")
    }

    /// A slot waiting for its feed's snapshot after a drain drops what the feed sends; when the feed
    /// ends it instead (deleted), the event that ended it is sent.
    @Test func aSlotEndedWhileWaitingForItsSnapshotSendsWhatEndedIt() async {
        let connection = MemorySink()
        let multiplexer = FeedMultiplexer(connection)
        let slot = multiplexer.makeSlot(feed: "a"), other = multiplexer.makeSlot(feed: "b")
        multiplexer.finishOpening()
        slot.onResync { _ in }  // the feed has not sent its snapshot yet
        connection.fallBehind()
        slot.send(EventPayload("event: batch\nid: a@2\ndata: {}\n\n"))  // dropped by the connection
        connection.drain()
        slot.send(EventPayload("event: deleted\ndata: {\"feed\":\"a\"}\n\n"))  // dropped: the slot waits for its snapshot
        slot.close()
        #expect(await connection.next()?.type == "deleted")
        other.send(EventPayload("event: batch\nid: b@2\ndata: {}\n\n"))
        #expect(await connection.next()?.id == "b@2")
    }

    @Test func aDeletedFeedEndsItsOwnPartAndTheLastOneEndsTheStream() async throws {
        let api = try await base.makeAPI()
        for feed in ["a", "b"] { _ = await base.put(api, feed, items: ["1"]) }
        let sink = try await base.subscribe(api, "/events?feed=a&feed=b")
        _ = await take(sink, 2)
        #expect(await api.handle(HTTPRequest(method: "DELETE", target: "/feeds/a", headers: ["Host": "x"])).status == .noContent)
        #expect(await take(sink, 1).map(\.data) == [#"{"feed":"a"}"#])
        _ = await base.put(api, "b", items: ["2"])
        #expect(await take(sink, 1).map(summary) == ["batch b 2"])
        _ = await base.put(api, "a", items: ["again"])  // recreated: the stream no longer carries it
        #expect(await api.handle(HTTPRequest(method: "DELETE", target: "/feeds/b", headers: ["Host": "x"])).status == .noContent)
        #expect(await take(sink, 1).map(summary) == ["deleted b"])
        #expect(await sink.next() == nil, "no feed left: the stream ended")
    }

    @Test func aStreamWhoseFeedsAllGoAtOnceEnds() async throws {
        let api = try await base.makeAPI()
        _ = await base.put(api, "a", items: ["1"])
        let response = await request(api, "/events?feed=a&feed=missing")
        guard case .stream(let start) = response.body else { Issue.record("\(response.status)"); return }
        #expect(await api.handle(HTTPRequest(method: "DELETE", target: "/feeds/a", headers: ["Host": "x"])).status == .noContent)
        let sink = MemorySink()
        start(sink)  // a was deleted between the answer and the opening
        #expect(await take(sink, 3).map(\.type) == ["deleted", "notfound"])
        #expect(await sink.next() == nil)
    }

    @Test func tokenExpiryEndsEveryFeedThenTheStream() async throws {
        let clock = FeedStreamTests.ManualClock(F.now)
        let api = try await base.makeAPI(jwt: true, clock: clock)
        try await put(api, "list", items: ["1"])
        let token = try await F.hs256(F.claims(subscribe: ["list", "counter"], exp: F.now + 60))
        let response = await request(api, "/events?feed=list&feed=counter", headers: ["Host": "x", "Authorization": "Bearer " + token])
        guard case .stream(let start) = response.body else { Issue.record("\(response.status)"); return }
        clock.set(F.now + 61)
        let sink = MemorySink()
        start(sink)
        #expect(await take(sink, 4).map(summary) == ["snapshot list 1", "snapshot counter 1", "unauthorized list", "unauthorized counter"])
        #expect(await sink.next() == nil)
    }

    @Test func theDisconnectedStreamLeavesEveryFeed() async throws {
        let api = try await base.makeAPI()
        _ = await base.put(api, "a", items: ["1"])
        let sink = try await base.subscribe(api, "/events?feed=a&feed=counter")
        _ = await take(sink, 2)
        sink.disconnect()
        // Unsubscribing is asynchronous: the next write is broadcast to nobody, and the count settles.
        let feed = try #require(try await api.registry.read("a"))
        #expect(await eventually { await feed.subscriberCount == 0 })
    }

    @Test(arguments: [
        ("event: batch\nid: ds1.0123456789abcdef.2\ndata: {\"id: x\"}\n\n", "event: batch\nid: f@ds1.0123456789abcdef.2\ndata: {\"id: x\"}\n\n"),
        ("event: batch\nid: 1\ndata: x\n\nevent: batch\nid: 2\ndata: y\n\n", "event: batch\nid: f@1\ndata: x\n\nevent: batch\nid: f@2\ndata: y\n\n"),
        ("event: deleted\ndata: {}\n\n", "event: deleted\ndata: {}\n\n"),
    ])
    func theMultiFeedFormNamesTheFeedInEveryID(single: String, multi: String) {
        #expect(String(decoding: FeedEvents.namingFeedInID(Array(single.utf8), feed: "f"), as: UTF8.self) == multi)
    }

    @Test func aSlotDrainedBeforeItsFeedAsksForResyncsIsCaughtUpOnceItDoes() async {
        let connection = MemorySink()
        let multiplexer = FeedMultiplexer(connection)
        let slot = multiplexer.makeSlot(feed: "a")
        connection.fallBehind()
        slot.send(EventPayload("event: batch\nid: a@1\ndata: {}\n\n"))  // lost
        connection.drain()  // before the feed has set its resync handler
        slot.send(EventPayload("event: batch\nid: a@2\ndata: {}\n\n"))  // dropped: it waits for its snapshot
        slot.onResync { $0.resume(with: EventPayload("event: snapshot\nid: a@2\ndata: {}\n\n")) }
        #expect(await connection.next().map { "\($0.type) \($0.id ?? "")" } == "snapshot a@2")
        multiplexer.finishOpening()
        slot.close()
        #expect(await connection.next() == nil, "its only slot closed: the stream ended")
    }

    @Test func aBatchStoredWithoutHistoryGetsItWhenRestored() {
        let stored = "event: batch\nid: ds1.0123456789abcdef.2\ndata: {\"feed\":\"a\",\"from\":1,\"version\":2,\"ops\":[]}\n\n"
        let restored = String(decoding: FeedEvents.addingHistory(Array(stored.utf8), feed: "a", history: "0123456789abcdef"), as: UTF8.self)
        #expect(restored == "event: batch\nid: ds1.0123456789abcdef.2\ndata: {\"feed\":\"a\",\"history\":\"0123456789abcdef\",\"from\":1,\"version\":2,\"ops\":[]}\n\n")
        #expect(FeedEvents.addingHistory(Array(restored.utf8), feed: "a", history: "0123456789abcdef") == Array(restored.utf8), "already there: unchanged")
    }

    @Test func positionsArePercentDecodedWithoutPlusAsSpace() throws {
        let request = HTTPRequest(method: "GET", target: "/events?feed=a%40ds1.x+y&feed=b@&feed=c&other=1&lastEventId=c@q", headers: [:])
        let parsed = try MultiFeedRequest(request, limit: 100)
        #expect(parsed.entries == [.init(feed: "a", position: "ds1.x+y"), .init(feed: "b", position: ""), .init(feed: "c", position: "q")])
    }
}
