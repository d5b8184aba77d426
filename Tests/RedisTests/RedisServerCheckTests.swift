import Testing
import Redis
@testable import RedisFeedStore

struct RedisServerCheckTests {
    static func pair(_ name: String, _ value: String) -> RedisReply { .array([.bulk(Array(name.utf8)), .bulk(Array(value.utf8))]) }

    static let cases: [(appendonly: String, fsync: String, policy: String, warnings: Int, errors: Int)] = [
        ("yes", "always", "noeviction", 0, 0),
        ("yes", "always", "volatile-lru", 0, 1),
        ("yes", "everysec", "noeviction", 1, 0),
        ("no", "always", "noeviction", 1, 0),
        ("yes", "always", "allkeys-lru", 0, 1),
        ("yes", "no", "allkeys-random", 1, 1),
    ]

    @Test(arguments: cases)
    func judgesTheSettings(_ row: (appendonly: String, fsync: String, policy: String, warnings: Int, errors: Int)) {
        let check = RedisServerCheck.judge(appendonly: Self.pair("appendonly", row.appendonly), appendfsync: Self.pair("appendfsync", row.fsync),
                                           maxmemoryPolicy: Self.pair("maxmemory-policy", row.policy))
        #expect(check.warnings.count == row.warnings)
        #expect(check.errors.count == row.errors)
        #expect(check.errors.allSatisfy { $0.contains(row.policy) })
    }

    @Test func aRefusedConfigIsAWarning() {
        let refused = RedisReply.error("ERR unknown command 'CONFIG'")
        let check = RedisServerCheck.judge(appendonly: refused, appendfsync: refused, maxmemoryPolicy: refused)
        #expect(check.errors.isEmpty)
        #expect(check.warnings.count == 1 && check.warnings[0].contains("unknown command"))
    }

    @Test(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
    func aRealServerIsAskedAndARenamedConfigIsAWarning() async throws {
        try await RedisTestServer.with { server in
            let client = RedisClient(url: server.url, timeout: 2)
            defer { client.stop() }
            #expect(try await RedisServerCheck.run(client) == RedisServerCheck())
            _ = try await client.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
            #expect(try await RedisServerCheck.run(client).errors.count == 1)
            _ = try await client.command("ACL", "SETUSER", "default", "-config")
            #expect(try await RedisServerCheck.run(client).warnings.first?.contains("CONFIG GET") == true)
        }
    }
}
