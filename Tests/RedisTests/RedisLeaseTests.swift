import Testing
import Redis
@testable import RedisFeedStore

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisLeaseTests {
    typealias Fixture = RedisFeedCommitterTests.Fixture

    /// Instance A holds the lease and commits; its lease is lost (expired: deleted here, so no clock is
    /// waited for); B takes it over; A's renewal fails and A's commit, at the right version, is refused.
    @Test func oneHolderAtATimeAndAStaleHolderCannotCommit() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            let lease = RedisLease(client: fixture.client, keys: fixture.committer.keys)
            let a = try #require(try await lease.acquire("week", milliseconds: 60_000))
            #expect(try await lease.acquire("week", milliseconds: 60_000) == nil)
            #expect(try await lease.renew("week", token: a, milliseconds: 60_000))
            #expect(try await fixture.committer.commit(fixture.write("week", base: 0, fence: a)) == .committed(version: 1, answer: [], first: true))

            _ = try await fixture.client.command("DEL", fixture.committer.keys.lease("week"))  // A's lease expired
            let b = try #require(try await lease.acquire("week", milliseconds: 60_000))
            #expect(a != b)
            #expect(try await !lease.renew("week", token: a, milliseconds: 60_000))
            #expect(try await fixture.committer.commit(fixture.write("week", base: 1, fence: a)) == .fenced(holder: b))
            #expect(try await fixture.committer.commit(fixture.write("week", base: 1, fence: b)) == .committed(version: 2, answer: [], first: true))

            #expect(try await !lease.release("week", token: a))
            #expect(try await lease.release("week", token: b))
            #expect(try await lease.acquire("week", milliseconds: 60_000) != nil)
        }
    }

    /// A family's shard lease (`family:home:7`, not a feed's) fences the commits of every feed under it:
    /// its token names it, and the script checks that lease, not the feed's own.
    @Test func aShardLeaseFencesEveryFeedItCovers() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            let lease = RedisLease(client: fixture.client, keys: fixture.committer.keys)
            let a = try #require(try await lease.acquire("family:home:7", milliseconds: 60_000))
            #expect(RedisLease.leaseName(ofToken: a) == "family:home:7")
            for feed in ["home.alice", "home.bob"] {
                #expect(try await fixture.committer.commit(fixture.write(feed, base: 0, fence: a)) == .committed(version: 1, answer: [], first: true))
            }
            _ = try await fixture.client.command("DEL", fixture.committer.keys.lease("family:home:7"))  // A's lease expired
            let b = try #require(try await lease.acquire("family:home:7", milliseconds: 60_000))
            #expect(try await fixture.committer.commit(fixture.write("home.alice", base: 1, fence: a)) == .fenced(holder: b))
            #expect(try await fixture.committer.commit(fixture.write("home.bob", base: 1, fence: b)) == .committed(version: 2, answer: [], first: true))
        }
    }

    @Test func aLeaseIsTakenWithItsTimeToLive() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            let lease = RedisLease(client: fixture.client, keys: fixture.committer.keys)
            _ = try #require(try await lease.acquire("week", milliseconds: 60_000))
            let ttl = try await fixture.client.command("PTTL", fixture.committer.keys.lease("week")).integer ?? 0
            #expect(ttl > 0 && ttl <= 60_000)
        }
    }
}
