import Redis

/// What the start checks of the Redis server's settings (issue 26): the promise that an acknowledged
/// write survives needs `appendfsync always`, and an evicting `maxmemory-policy` would drop feeds
/// silently.
public struct RedisServerCheck: Sendable, Equatable {
    /// Said in the log; the start goes on.
    public var warnings: [String] = []
    /// Stop the start (exit 2).
    public var errors: [String] = []

    /// The one policy that never evicts. The `volatile-*` ones evict only keys with a TTL, which feeds
    /// have not, but write ids and given-up attempts have: evicting those would let a retried write run
    /// twice, or a given-up commit run after all.
    static let safePolicies: Set<String> = ["noeviction"]

    /// Asks the server with `CONFIG GET`. A refused `CONFIG` (managed Redis renames or forbids it) is a
    /// warning, not an error.
    public static func run(_ client: RedisClient) async throws(RedisError) -> RedisServerCheck {
        let replies = try await client.run { connection throws(RedisError) in
            try connection.pipeline([["CONFIG", "GET", "appendonly"], ["CONFIG", "GET", "appendfsync"], ["CONFIG", "GET", "maxmemory-policy"]]
                .map { $0.map { Array($0.utf8) } })
        }
        return judge(appendonly: replies[0], appendfsync: replies[1], maxmemoryPolicy: replies[2])
    }

    /// Judges the three `CONFIG GET` answers (each `[name, value]`, or an error).
    static func judge(appendonly: RedisReply, appendfsync: RedisReply, maxmemoryPolicy: RedisReply) -> RedisServerCheck {
        var check = RedisServerCheck()
        for reply in [appendonly, appendfsync, maxmemoryPolicy] {
            if case .error(let message) = reply {
                check.warnings.append("Redis refused CONFIG GET (\(message)): its persistence and eviction settings cannot be checked; acknowledged writes survive a Redis crash only with appendonly yes and appendfsync always, and no key may be evicted")
                return check
            }
        }
        func value(_ reply: RedisReply) -> String? { reply.array.flatMap { $0.count == 2 ? $0[1].string : nil } }
        if value(appendonly) != "yes" {
            check.warnings.append("Redis runs with appendonly \(value(appendonly) ?? "(unknown)"): a Redis crash loses acknowledged writes; set appendonly yes and appendfsync always")
        } else if value(appendfsync) != "always" {
            check.warnings.append("Redis runs with appendfsync \(value(appendfsync) ?? "(unknown)"): a Redis crash can lose the last acknowledged writes; set appendfsync always")
        }
        let policy = value(maxmemoryPolicy) ?? "(unknown)"
        if !safePolicies.contains(policy) {
            check.errors.append("Redis's maxmemory-policy is \(policy), which evicts keys: feeds would vanish without a trace; set it to noeviction")
        }
        return check
    }
}
