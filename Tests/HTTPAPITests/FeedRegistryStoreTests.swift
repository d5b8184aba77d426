import DiffStreamJSON
import FeedStorage
import EpollRuntime
import Foundation
import Synchronization
import Testing
import FeedCore
import HTTPAPI
import ViewModelHosting

/// A store in memory that keeps what a durable one would, and can be told to fail: the feed logic
/// against the seam, without disks or sockets.
final class MemoryStore: FeedStore {
    private let state = Mutex<(feeds: [String: StoredFeed], failing: StoreError?, writes: [FeedWrite])>(([:], nil, []))

    func fail(with error: StoreError?) { state.withLock { $0.failing = error } }
    var writes: [FeedWrite] { state.withLock { $0.writes } }

    func load() throws(StoreError) -> StoreContents {
        StoreContents(feeds: state.withLock { $0.feeds.values.sorted { $0.name < $1.name } })
    }

    func commit(_ write: FeedWrite) async throws(StoreError) {
        let failure: StoreError? = state.withLock { state in
            if let failing = state.failing { return failing }
            state.writes.append(write)
            switch write {
            case .put(let name, let history, let version, let snapshot, let batch, let keepFrom, let viewState):
                var feed = state.feeds[name] ?? StoredFeed(name: name, history: history, version: version, snapshot: snapshot, batches: [], viewState: nil)
                feed.history = history
                feed.version = version
                feed.snapshot = snapshot
                if let viewState { feed.viewState = viewState }
                if let batch { feed.batches = (feed.batches + [batch]).filter { $0.version >= keepFrom } } else { feed.batches = [] }
                state.feeds[name] = feed
            case .viewState(let name, let bytes):
                state.feeds[name]?.viewState = bytes
            case .delete(let name):
                state.feeds[name] = nil
            }
            return nil
        }
        if let failure { throw failure }
    }

    func metrics() -> StoreMetrics { StoreMetrics() }
}

struct FeedRegistryStoreTests {
    func api(_ store: MemoryStore) async throws -> (FeedAPI, FeedRegistry) {
        let registry = FeedRegistry(replayLimit: 4, store: store)
        _ = await registry.restore(try store.load().feeds)
        let hosted = HostedFeeds(registry: registry)
        try await hosted.host(Counter(), as: "counter")
        return (FeedAPI(registry: registry, hosted: hosted, files: nil, options: .init(), serverMetrics: { nil }), registry)
    }

    func request(_ method: String, _ target: String, _ body: String = "") -> HTTPRequest {
        HTTPRequest(method: method, target: target, headers: ["Host": "x"], body: Array(body.utf8))
    }

    func body(_ response: HTTPResponse) -> [UInt8] {
        if case .bytes(let bytes) = response.body { return bytes }
        return []
    }

    func snapshot(_ ids: [String]) -> String {
        #"{"sections":[{"id":"s","items":["# + ids.map { #"{"id":"\#($0)","kind":"k"}"# }.joined(separator: ",") + "]}]}"
    }

    @Test func aRestartedRegistryHasTheSameHistoryVersionSnapshotAndWindow() async throws {
        let store = MemoryStore()
        let (first, registry) = try await api(store)
        for ids in [["a"], ["b", "a"], ["b"], ["c", "b"]] { _ = await first.handle(request("PUT", "/feeds/list", snapshot(ids))) }
        let history = try #require(try await registry.read("list")?.history)
        let (second, restored) = try await api(store)
        let after = try #require(try await restored.read("list"))
        #expect(await after.history == history)
        #expect(await after.version == 4)
        #expect(body(await second.handle(request("GET", "/feeds/list"))) == body(await first.handle(request("GET", "/feeds/list"))))
        // Resuming from version 2 gets exactly batches 3 and 4, not a snapshot.
        let missed = try #require(await after.missedBatches(since: EventID(history: history, version: 2).description))
        #expect(missed.map { String(decoding: $0.bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("id: ") } } == ["id: ds1.\(history).3", "id: ds1.\(history).4"])
    }

    /// The store keeps the feed's own window: it grows to a quarter past `replayLimit` and is then cut
    /// back to it in one step (so most writes delete no batch row), and a restart resumes from it.
    @Test func theStoredWindowIsTheFeedsWindowCutBackInSteps() async throws {
        let store = MemoryStore()
        let (first, _) = try await api(store)
        var expected: [Int] = []
        for version in 1...23 {
            _ = await first.handle(request("PUT", "/feeds/list", snapshot(["v\(version)"])))
            if version > 1 {
                expected.append(version)
                if expected.count > 4 + 4 / 4 { expected.removeFirst(expected.count - 4) }
            }
            let stored = try #require(try store.load().feeds.first { $0.name == "list" })
            #expect(stored.batches.map(\.version) == expected, "after version \(version)")
        }
        let (_, restored) = try await api(store)
        let feed = try #require(try await restored.read("list"))
        let history = await feed.history
        #expect(await feed.missedBatches(since: EventID(history: history, version: 19).description)?.count == 4)
        #expect(await feed.missedBatches(since: EventID(history: history, version: 18).description) == nil, "older than the window: a snapshot")
    }

    @Test func aWriteTheStoreRefusesIsA503AndChangesNothing() async throws {
        let store = MemoryStore()
        let (api, registry) = try await api(store)
        #expect(await api.handle(request("PUT", "/feeds/list", snapshot(["a"]))).status == .created)
        store.fail(with: .full(path: "/data"))
        for attempt in [request("PUT", "/feeds/list", snapshot(["b"])), request("PUT", "/feeds/other", snapshot(["x"])),
                        request("DELETE", "/feeds/list"), request("PATCH", "/feeds/counter", #"{"label":"x"}"#),
                        request("POST", "/feeds/counter/actions/increment"), request("POST", "/feeds/counter/actions/add", #"{"amount":2}"#)] {
            let response = await api.handle(attempt)
            #expect(response.status.code == 503, "\(attempt.method) \(attempt.path)")
        }
        #expect(try await registry.read("other") == nil)
        #expect(try await registry.read("list")?.version == 1)
        #expect(try await registry.read("counter")?.version == 1)
        store.fail(with: nil)
        let recovered = await api.handle(request("PUT", "/feeds/list", snapshot(["b"])))
        #expect(recovered.status == .ok)
        #expect(try await registry.read("list")?.version == 2)
    }

    @Test func viewModelStateAndDeletionsSurviveARestart() async throws {
        let store = MemoryStore()
        let (first, _) = try await api(store)
        _ = await first.handle(request("PATCH", "/feeds/counter", #"{"label":"kept"}"#))
        _ = await first.handle(request("POST", "/feeds/counter/actions/add", #"{"amount":5}"#))
        _ = await first.handle(request("POST", "/feeds/counter/actions/increment"))
        _ = await first.handle(request("PUT", "/feeds/gone", snapshot(["a"])))
        _ = await first.handle(request("DELETE", "/feeds/gone"))
        let (second, registry) = try await api(store)
        #expect(try JSONParser.parse(body(await second.handle(request("GET", "/feeds/counter"))))["sections"]?.arrayValue?.first?["items"]?.arrayValue?.first?["model"] == ["count": 6, "label": "kept"])
        for feed in ["counter"] {
            #expect(body(await second.handle(request("GET", "/feeds/\(feed)"))) == body(await first.handle(request("GET", "/feeds/\(feed)"))), "\(feed)")
        }
        // The state itself came back, not just the snapshot: the next change continues from it.
        #expect(try JSONParser.parse(body(await second.handle(request("POST", "/feeds/counter/actions/increment")))) == ["feed": "counter", "version": 5, "ops": 1])
        #expect(try await registry.read("gone") == nil)
        #expect(await second.handle(request("GET", "/feeds/gone")).status == .notFound)
    }

    static func items(_ count: Int, text: String = "x") throws -> WireSnapshot {
        let list = (0..<count).map { #"{"id":"i\#($0)","kind":"k","model":"\#(text)"}"# }.joined(separator: ",")
        return try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","model":null,"items":[\#(list)]}]}"#.utf8))
    }

    /// Issue 38: a family member committing through a member store the account counts is counted once,
    /// where it is kept: not charged as it is made, written, dropped or made again, and a write that
    /// would pass --max-store-bytes is refused with nothing stored.
    @Test func aMemberKeptOnDiskIsCountedOnceWhereItIsKept() async throws {
        let directory = NSTemporaryDirectory() + "diffstream-kept-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let members = try MemberStore(directory: directory, maxBatches: 4)
        defer { members.close() }
        let account = StorageAccount(limits: StorageLimits(maxFeeds: 10, maxFeedBytes: 100_000, maxStoreBytes: 3_000))
        account.count(kept: members)
        let registry = FeedRegistry(replayLimit: 4, storage: account)

        let feed = try await registry.adopt("home.a", restoring: nil, log: members, replayLimit: 4)
        #expect(await feed.bytesKeptByLog)
        try await feed.publish(Self.items(3))
        #expect(members.bytes() > 0)
        #expect(account.usage == (0, members.bytes()))
        try await feed.publish(Self.items(5))
        #expect(account.usage == (0, members.bytes()))
        await registry.drop("home.a")
        #expect(account.usage == (0, members.bytes()))  // dropped, still kept: still counted

        let again = try await registry.adopt("home.a", restoring: try members.read("home.a"), log: members, replayLimit: 4)
        #expect(account.usage == (0, members.bytes()))  // made again: not charged a second time
        let kept = members.bytes()
        let big = try Self.items(120)  // alone more than the limit
        do throws(FeedWriteError) {
            _ = try await again.publish(big)
            Issue.record("a write past --max-store-bytes was taken")
        } catch .limit(let exceeded) {
            #expect(exceeded.limit == .maxStoreBytes && exceeded.needed > 3_000)
        } catch {
            Issue.record("\(error)")
        }
        #expect(members.bytes() == kept && account.usage == (0, kept))
        #expect(try await registry.delete("home.a"))
        #expect(account.usage == (0, 0) && members.bytes() == 0)
    }

    /// Without a store the account counts (in memory only), a member is charged while it is live.
    @Test func aMemberInMemoryIsChargedWhileLive() async throws {
        let account = StorageAccount()
        let registry = FeedRegistry(replayLimit: 4, storage: account)
        let feed = try await registry.adopt("home.a", restoring: nil, log: MemoryFeedLog(), replayLimit: 4)
        #expect(!(await feed.bytesKeptByLog))
        try await feed.publish(Self.items(3))
        #expect(account.usage.bytes == (await feed.storedBytes))
        await registry.drop("home.a")
        #expect(account.usage.bytes == 0)
    }

    /// A hosted view model's state is stored with its snapshot where the feed keeps it (a store), and
    /// not encoded at all for a feed only in memory (issue 39: no whole-state encoding per action there).
    @Test(arguments: [true, false])
    func theStateIsKeptOnlyWhereTheFeedKeepsIt(withStore: Bool) async throws {
        let store = MemoryStore()
        let registry = withStore ? FeedRegistry(replayLimit: 4, store: store) : FeedRegistry(replayLimit: 4)
        let hosted = HostedFeeds(registry: registry)
        let host = try await hosted.host(Counter(), as: "counter")
        _ = try await host.perform("add", body: Array(#"{"amount":2}"#.utf8))
        #expect(registry.keepsViewState("counter") == withStore)
        let kept = try await registry.read("counter")?.viewState
        if withStore {
            #expect(kept == Array(#"{"count":2,"label":"count"}"#.utf8))
            #expect(try store.load().feeds.first { $0.name == "counter" }?.viewState == kept)
        } else {
            #expect(kept == nil)
        }
        #expect(await host.state.count == 2)
    }
}
