import FeedStorage
import Testing
import Redis
@testable import RedisFeedStore

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisStoreTests {
    static func put(_ name: String, _ version: Int, history: String = "h1", state: String? = nil) -> FeedWrite {
        .put(name: name, history: history, version: version, snapshot: Array("s\(version)".utf8),
             batch: version == 1 ? nil : StoredBatch(version: version, bytes: Array("b\(version)".utf8)), keepFrom: 1, viewState: state.map { Array($0.utf8) })
    }

    @Test func whatIsCommittedIsLoadedBack() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(prefix: "s"), replay: 2)
            defer { store.close() }
            #expect(try store.load().feeds.isEmpty)
            for version in 1...4 { try await store.commit(Self.put("news", version, state: version == 4 ? "st" : nil)) }
            try await store.commit(Self.put("other", 1))
            try await store.commit(.viewState(name: "other", bytes: Array("v".utf8)))
            try await store.commit(Self.put("gone", 1))
            try await store.commit(.delete(name: "gone"))
            let feeds = try store.load().feeds
            #expect(feeds.map(\.name) == ["news", "other"])
            #expect(feeds[0] == StoredFeed(name: "news", history: "h1", version: 4, snapshot: Array("s4".utf8),
                                           batches: [3, 4].map { StoredBatch(version: $0, bytes: Array("b\($0)".utf8)) }, viewState: Array("st".utf8)))
            #expect(feeds[1].viewState == Array("v".utf8) && feeds[1].version == 1)
            #expect(store.metrics().commits == 8 && store.metrics().failedCommits == 0)
            // Another store on the same Redis and prefix shares the epoch and the feeds.
            let second = try RedisStore.open(url: server.url, keys: RedisKeys(prefix: "s"), replay: 2)
            defer { second.close() }
            #expect(second.epoch == store.epoch)
            #expect(try second.load().feeds.map(\.version) == [4, 1])
        }
    }

    @Test func aWriteThatIsNotTheNextVersionOrAfterLostDataIsRefused() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(), replay: 8)
            defer { store.close() }
            try await store.commit(Self.put("news", 1))
            await #expect { try await store.commit(Self.put("news", 3)) } throws: { error in
                guard case .io(let path, let reason) = error as? StoreError else { return false }
                return path == server.url.description && reason.contains("version 1")
            }
            _ = try RedisConnection(url: server.url, timeout: 2).command(["FLUSHALL"])
            await #expect { try await store.commit(Self.put("news", 2)) } throws: { error in
                guard case .io(_, let reason) = error as? StoreError else { return false }
                return reason.contains("lost its data")
            }
            #expect(store.metrics().failedCommits == 2)
        }
    }

    @Test func aFullRedisRefusesWritesAsOutOfMemoryAndSaysSoUntilItHasRoom() async throws {
        try await RedisTestServer.with { server in
            let store = try RedisStore.open(url: server.url, keys: RedisKeys(prefix: "full"), replay: 4)
            defer { store.close() }
            let admin = try RedisConnection(url: server.url, timeout: 2)
            defer { admin.close() }
            try await store.commit(Self.put("news", 1))
            try await store.commit(Self.put("gone", 1))
            #expect(await store.writeRefusal() == nil)
            _ = try admin.command(["CONFIG", "SET", "maxmemory", "1"])
            await #expect { try await store.commit(Self.put("news", 2)) } throws: { error in
                guard case .outOfMemory(let url, _) = error as? StoreError else { return false }
                return url == server.url.description
            }
            // Creating a feed is refused too, before anything is written (the script's first write is the probe).
            await #expect { try await store.commit(Self.put("fresh", 1)) } throws: { ($0 as? StoreError).map { if case .outOfMemory = $0 { true } else { false } } ?? false }
            #expect(try admin.command(["EXISTS", store.keys.feed("fresh")]).integer == 0)
            let refusal = await store.writeRefusal()
            #expect(refusal?.contains("maxmemory 1") == true && refusal?.contains("is full") == true)
            // A delete frees memory: it runs while Redis is full.
            try await store.commit(.delete(name: "gone"))
            _ = try admin.command(["CONFIG", "SET", "maxmemory", "0"])
            #expect(await store.writeRefusal() == nil)
            try await store.commit(Self.put("news", 2))
            #expect(try store.load().feeds.map(\.version) == [2])
        }
    }

    @Test func aRedisThatCannotBeReachedIsAStoreErrorNamingIt() async throws {
        let port = try RedisTestServer.freePort()
        #expect(throws: RedisError.self) { try RedisStore.open(url: RedisURL(host: "127.0.0.1", port: port), keys: RedisKeys(), replay: 8) }
    }
}
