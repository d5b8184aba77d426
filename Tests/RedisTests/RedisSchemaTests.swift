import Testing
import Redis
@testable import RedisFeedStore

struct RedisSchemaTests {
    static let verdicts: [(stored: String?, schema: Int, verdict: RedisSchema.Verdict)] = [
        (nil, 1, .known),
        ("1", 1, .known),
        ("1", 2, .known),
        ("2", 1, .newer(stored: "2")),
        ("99", 1, .newer(stored: "99")),
        ("v1", 1, .newer(stored: "v1")),
        ("0", 1, .newer(stored: "0")),
    ]

    @Test(arguments: verdicts)
    func aMarkerNewerThanTheBuildOrNotANumberIsRefused(_ row: (stored: String?, schema: Int, verdict: RedisSchema.Verdict)) {
        #expect(RedisSchema.verdict(stored: row.stored, schema: row.schema) == row.verdict)
    }

    @Test func theMarkerIsOutsideTheVersionedNamespace() {
        let keys = RedisKeys(prefix: "app:ds")
        #expect(keys.schema == "app:ds:schema")
        #expect(!keys.schema.hasPrefix(keys.base))
        let line = RedisSchema.refusal(stored: "99", keys: keys, url: "redis://127.0.0.1:6379")
        #expect(line.contains("key schema 99") && line.contains("key schema 1 at most") && line.contains("app:ds:schema") && !line.contains("\n"))
    }

    @Test(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
    func theFirstStartWritesTheMarkerAndANewerOneIsRefused() async throws {
        try await RedisTestServer.with { server in
            let connection = try RedisConnection(url: server.url, timeout: 2)
            defer { connection.close() }
            let keys = RedisKeys(prefix: "schema-test")
            #expect(try RedisSchema.check(connection, keys: keys) == .known)
            #expect(try connection.command(["GET", keys.schema]).string == "1")
            #expect(try RedisSchema.check(connection, keys: keys) == .known)
            _ = try connection.command(["SET", keys.schema, "99"])
            #expect(try RedisSchema.check(connection, keys: keys) == .newer(stored: "99"))
            #expect(try connection.command(["GET", keys.schema]).string == "99")  // left as found
            // An older build's marker is raised to this build's schema.
            #expect(try RedisSchema.check(connection, keys: keys, schema: 100) == .known)
            #expect(try connection.command(["GET", keys.schema]).string == "100")
        }
    }
}
