import TestSupport
import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import HTTPCore
import Synchronization
import Testing

/// Feeds and hosted view models through the transport seam, in memory (``MemorySink``): subscribe,
/// snapshot, batches in order, resume, resync, deleted and expiry, with no socket.
struct FeedStreamTests {
    typealias F = TokenFixtures

    /// A clock a test moves by hand (seconds since 1970).
    final class ManualClock: Sendable {
        private let seconds: Mutex<Double>
        init(_ start: Double) { seconds = Mutex(start) }
        func now() -> Double { seconds.withLock { $0 } }
        func set(_ value: Double) { seconds.withLock { $0 = value } }
    }

    func makeAPI(jwt: Bool = false, clock: ManualClock? = nil) async throws -> FeedAPI {
        let registry = FeedRegistry(replayLimit: 8, transport: MemoryBroadcaster())
        let hosted = HostedFeeds(registry: registry)
        try await hosted.host(Counter(), as: "counter")
        var options = FeedAPI.Options()
        if jwt {
            options.verifier = try await JWTVerifier(hmacSecret: F.secret)
            options.privateReads = true
        }
        if let clock { options.now = { clock.now() } }
        return FeedAPI(registry: registry, hosted: hosted, files: nil, options: options, serverMetrics: { nil })
    }

    func put(_ api: FeedAPI, _ feed: String, items: [String], headers: HTTPHeaders = ["Host": "x"]) async -> HTTPStatus {
        let body = #"{"sections":[{"id":"s","model":null,"items":["# + items.map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",") + "]}]}"
        return await api.handle(HTTPRequest(method: "PUT", target: "/feeds/" + feed, headers: headers, body: Array(body.utf8))).status
    }

    /// Opens `target` as an event stream on a new in-memory sink.
    func subscribe(_ api: FeedAPI, _ target: String, headers: HTTPHeaders = ["Host": "x"]) async throws -> MemorySink {
        let response = await api.handle(HTTPRequest(method: "GET", target: target, headers: headers))
        guard case .stream(let start) = response.body else {
            Issue.record("\(target): \(response.status), not a stream")
            throw CancellationError()
        }
        let sink = MemorySink()
        start(sink)
        return sink
    }

    func field(_ event: MemorySink.Event?, _ key: String) -> JSONValue? {
        guard case .object(let members)? = event?.json else { return nil }
        return members.first { $0.key == key }?.value
    }

    @Test func aSubscriberGetsTheSnapshotThenEveryBatchInOrder() async throws {
        let api = try await makeAPI()
        #expect(await put(api, "list", items: ["a"]) == .created)
        let sink = try await subscribe(api, "/feeds/list/events")
        let snapshot = await sink.next()
        #expect(snapshot?.type == "snapshot" && field(snapshot, "version") == 1)
        for (version, items) in [(2, ["a", "b"]), (3, ["b", "a"]), (4, ["b"])] {
            #expect(await put(api, "list", items: items) == .ok)
            let batch = await sink.next()
            #expect(batch?.type == "batch" && field(batch, "from") == .number(Double(version - 1)) && field(batch, "version") == .number(Double(version)))
            #expect(batch?.id?.hasSuffix(".\(version)") == true)
        }
    }

    @Test func everyStreamOpensWithTheRetryAndHeartbeatAnnouncementAndEventsCarryTheHistory() async throws {
        let api = try await makeAPI()
        _ = await put(api, "list", items: ["a"])
        let sink = try await subscribe(api, "/feeds/list/events")
        let snapshot = try #require(await sink.next())
        #expect(sink.text.hasPrefix("retry: 2000\n: heartbeat 15\n\nevent: snapshot\n"))
        let history = try #require(snapshot.id.flatMap { EventID($0)?.history })
        #expect(field(snapshot, "history") == .string(history))
        _ = await put(api, "list", items: ["a", "b"])
        let batch = await sink.next()
        #expect(field(batch, "history") == .string(history))
        #expect(batch?.data.hasPrefix(#"{"feed":"list","history":"\#(history)","from":1,"version":2,"ops":"#) == true)
        let document = await api.handle(HTTPRequest(method: "GET", target: "/feeds/list", headers: ["Host": "x"]))
        guard case .bytes(let body) = document.body else { Issue.record("not a body"); return }
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.hasPrefix(#"{"feed":"list","history":"\#(history)","version":2,"sections":"#), "the document has the history")
        #expect(text.hasSuffix(#","id":"ds1.\#(history).2"}"# + "\n"), "and the event id of its version")
        #expect(document.headers["ETag"] == "\"ds1.\(history).2\"")
    }

    /// `If-None-Match` against the document's tags (RFC 9110 §13.1.2): either variant of the current
    /// position, weak or strong, or `*`, is `304` with the tag named; anything else the document.
    @Test(arguments: [
        (#""ds1.0123456789abcdef.2""#, true, #""ds1.0123456789abcdef.2""#), (#"W/"ds1.0123456789abcdef.2""#, true, #""ds1.0123456789abcdef.2""#),
        (#""x", "ds1.0123456789abcdef.2-gz""#, true, #""ds1.0123456789abcdef.2-gz""#), ("*", true, #""ds1.0123456789abcdef.2""#),
        (#""ds1.0123456789abcdef.2-gz""#, false, nil), (#""ds1.0123456789abcdef.2-gz", "ds1.0123456789abcdef.2""#, false, #""ds1.0123456789abcdef.2""#),
        (#""ds1.0123456789abcdef.1""#, true, nil), (#""ds1.0123456789abcdef.2-br""#, true, nil), ("", true, nil),
    ] as [(String, Bool, String?)])
    func aDocumentIsNotModifiedWhileItsTagIsHeld(condition: String, acceptsGzip: Bool, notModifiedWith: String?) {
        let read = (id: EventID(history: "0123456789abcdef", version: 2), json: Array(#"{"feed":"f"}"#.utf8))
        let response = FeedAPI.document(read, ifNoneMatch: condition, acceptsGzip: acceptsGzip)
        if let notModifiedWith {
            #expect(response.status.code == 304 && response.headers["ETag"] == notModifiedWith && response.headers["Vary"] == "Accept-Encoding")
        } else {
            #expect(response.status.code == 200 && response.headers["ETag"] == #""ds1.0123456789abcdef.2""#)
        }
    }

    @Test(arguments: [(15.0, ": heartbeat 15"), (2, ": heartbeat 2"), (0.5, ": heartbeat 0.5")])
    func theAnnouncementNamesTheHeartbeatAsTheFlagWritesIt(seconds: Double, line: String) async throws {
        let registry = FeedRegistry(replayLimit: 8, transport: MemoryBroadcaster())
        var options = FeedAPI.Options()
        options.heartbeat = seconds
        let api = FeedAPI(registry: registry, hosted: nil, files: nil, options: options, serverMetrics: { nil })
        _ = await put(api, "list", items: ["a"])
        let sink = try await subscribe(api, "/feeds/list/events", headers: ["Host": "x"])
        _ = await sink.next()
        #expect(sink.text.hasPrefix("retry: 2000\n\(line)\n\n"))
    }

    @Test func aResumingSubscriberGetsOnlyTheBatchesItMissed() async throws {
        let api = try await makeAPI()
        _ = await put(api, "list", items: ["a"])
        let first = try await subscribe(api, "/feeds/list/events")
        let id = try #require(await first.next()?.id)
        _ = await put(api, "list", items: ["a", "b"])
        _ = await put(api, "list", items: ["b"])
        first.disconnect()
        let resumed = try await subscribe(api, "/feeds/list/events", headers: ["Host": "x", "Last-Event-ID": id])
        let missed = [await resumed.next(), await resumed.next()]
        #expect(missed.map { $0?.type } == ["batch", "batch"] && missed.map { field($0, "version") } == [2, 3])
        let foreign = try await subscribe(api, "/feeds/list/events", headers: ["Host": "x", "Last-Event-ID": "ds1.00000000000000ff.2"])
        let snapshot = await foreign.next()
        #expect(snapshot?.type == "snapshot" && field(snapshot, "version") == 3)
    }

    /// The replay window is the last `replayLimit` (8) batches exactly, though the feed holds up to a
    /// quarter more between trims: a client that missed 8 gets batches, one that missed 9 a snapshot.
    @Test(arguments: [(8, "batch"), (9, "snapshot")])
    func aResumeReplaysTheWindowAndNoMore(missed: Int, first: String) async throws {
        let api = try await makeAPI()
        _ = await put(api, "list", items: ["a"])
        let sink = try await subscribe(api, "/feeds/list/events")
        let id = try #require(await sink.next()?.id)
        sink.disconnect()
        for n in 1...missed { _ = await put(api, "list", items: ["a"] + (0..<n).map { "i\($0)" }) }
        let resumed = try await subscribe(api, "/feeds/list/events", headers: ["Host": "x", "Last-Event-ID": id])
        let next = await resumed.next()
        #expect(next?.type == first)
        #expect(field(next, first == "batch" ? "from" : "version") == .number(Double(first == "batch" ? 1 : 1 + missed)))
    }

    @Test func aSubscriberThatFellBehindIsCaughtUpWithASnapshot() async throws {
        let api = try await makeAPI()
        _ = await put(api, "list", items: ["a"])
        let sink = try await subscribe(api, "/feeds/list/events")
        _ = await sink.next()
        sink.fallBehind()
        _ = await put(api, "list", items: ["a", "b"])
        _ = await put(api, "list", items: ["a", "b", "c"])
        sink.drain()
        let caughtUp = await sink.next()
        #expect(caughtUp?.type == "snapshot" && field(caughtUp, "version") == 3)
        _ = await put(api, "list", items: ["c"])
        let next = await sink.next()
        #expect(next?.type == "batch" && field(next, "from") == 3)
    }

    @Test func aDeletedFeedEndsItsStreams() async throws {
        let api = try await makeAPI()
        _ = await put(api, "list", items: ["a"])
        let sink = try await subscribe(api, "/feeds/list/events")
        _ = await sink.next()
        #expect(await api.handle(HTTPRequest(method: "DELETE", target: "/feeds/list", headers: ["Host": "x"])).status == .noContent)
        let deleted = await sink.next()
        #expect(deleted?.type == "deleted" && field(deleted, "feed") == "list")
        #expect(await sink.next() == nil, "the stream ended")
    }

    @Test func aStreamOpenedWithASignedTokenEndsWhenTheTokenDoes() async throws {
        let clock = ManualClock(F.now)
        let api = try await makeAPI(jwt: true, clock: clock)
        let token = try await F.hs256(F.claims(subscribe: ["counter"], exp: F.now + 60))
        let response = await api.handle(HTTPRequest(method: "GET", target: "/feeds/counter/events", headers: ["Host": "x", "Authorization": "Bearer " + token]))
        guard case .stream(let start) = response.body else { Issue.record("\(response.status)"); return }
        clock.set(F.now + 61)  // the token expires before the stream has sent anything
        let sink = MemorySink()
        start(sink)
        #expect(await sink.next()?.type == "snapshot")
        let expired = await sink.next()
        #expect(expired?.type == "unauthorized" && field(expired, "error") == "token expired")
        #expect(await sink.next() == nil)
    }

    @Test func aHostedViewModelsActionIsOneBatchOnItsStream() async throws {
        let api = try await makeAPI()
        let sink = try await subscribe(api, "/feeds/counter/events")
        #expect(await sink.next()?.type == "snapshot")
        let answer = await api.handle(HTTPRequest(method: "POST", target: "/feeds/counter/actions/increment", headers: ["Host": "x"]))
        #expect(answer.status == .ok)
        let batch = await sink.next()
        guard case .array(let ops)? = field(batch, "ops") else { Issue.record("\(String(describing: batch))"); return }
        #expect(batch?.type == "batch" && ops.count == 1 && field(batch, "version") == 2)
    }
}
