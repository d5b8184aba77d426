import DiffStreamJSON
import FeedServer
import FeedStorage
import Testing
import Redis
@testable import RedisFeedStore

/// The registry and its feeds on `RedisStore`, with no change to either: what one instance commits, a
/// restarted one restores (history, version, snapshot, window, view state).
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisStoreRegistryTests {
    static func snapshot(_ items: [Int]) throws -> WireSnapshot {
        let list = items.map { #"{"id":"\#($0)","kind":"k","model":{"n":\#($0)}}"# }.joined(separator: ",")
        return try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"a","model":null,"items":[\#(list)]}]}"#.utf8))
    }

    @Test func aRestartedRegistryRestoresWhatItsStoreCommittedToRedis() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 4)
            let registry = FeedRegistry(replayLimit: 4, sharing: store)
            #expect(try await registry.write("news", snapshot: Self.snapshot([1])).version == 1)
            for count in 2...6 { _ = try await registry.write("news", snapshot: Self.snapshot(Array(1...count)), viewState: Array("{\"n\":\(count)}".utf8)) }
            _ = try await registry.write("gone", snapshot: Self.snapshot([1]))
            #expect(try await registry.delete("gone"))
            let before = try #require(try await registry.read("news"))
            let (history, document) = (await before.history, await before.document())
            store.close()

            let reopened = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 4)
            defer { reopened.close() }
            let contents = try reopened.load()
            let restarted = FeedRegistry(replayLimit: 4, sharing: reopened)
            #expect(await restarted.restore(contents.feeds).isEmpty)
            #expect(try await restarted.list().map(\.name) == ["news"])
            let after = try #require(try await restarted.read("news"))
            #expect(await after.history == history)
            let restored = await after.document()
            #expect(restored.version == 6 && restored.json == document.json)
            #expect(await after.viewState == Array("{\"n\":6}".utf8))
            #expect(contents.feeds[0].batches.map(\.version) == [3, 4, 5, 6])
            // Writes go on from there.
            #expect(try await restarted.write("news", snapshot: Self.snapshot([7])).version == 7)
        }
    }
}
