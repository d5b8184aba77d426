import Redis

/// The key-schema marker: `<prefix>:schema` holds the highest key schema that has written under the
/// prefix (issue 51, item 5). It lives outside every versioned namespace (`<prefix>:v<n>:`), so that a
/// build of any schema finds it: a build that finds a schema newer than its own refuses to start, where
/// it would otherwise start on an empty namespace of its own and serve no feeds, as the log and the
/// member store refuse a newer format.
public enum RedisSchema {
    /// What the marker says of this build.
    public enum Verdict: Sendable, Equatable {
        /// The marker holds this build's schema (written now if it was absent, raised if it was older).
        case known
        /// The marker holds `stored`, a schema newer than this build's, or something that is not a
        /// schema number at all (`stored` as found): the start must stop.
        case newer(stored: String)
    }

    /// KEYS: 1 the marker. ARGV: 1 this build's schema. Absent or older: set to ARGV 1. Returns what
    /// was stored before (nil when absent).
    static let script = """
        local stored = redis.call('GET', KEYS[1])
        local number = stored and tonumber(stored)
        if not stored or (number and number < tonumber(ARGV[1])) then redis.call('SET', KEYS[1], ARGV[1]) end
        return stored
        """

    /// Reads the marker of `keys`' prefix, and writes this build's schema when it is absent or older.
    /// - Complexity: one `EVAL` (a `GET`, at most one `SET`).
    public static func check(_ connection: RedisConnection, keys: RedisKeys, schema: Int = RedisKeys.schemaVersion) throws(RedisError) -> Verdict {
        let reply = try connection.command(["EVAL", script, "1", keys.schema, String(schema)])
        if case .error(let message) = reply { throw .server(command: "EVAL (schema)", message: message) }
        return verdict(stored: reply.string, schema: schema)
    }

    /// What a stored marker (nil: none) means to a build of `schema`.
    static func verdict(stored: String?, schema: Int) -> Verdict {
        guard let stored else { return .known }
        guard let number = Int(stored), number >= 1 else { return .newer(stored: stored) }
        return number > schema ? .newer(stored: stored) : .known
    }

    /// The one line a refused start says.
    public static func refusal(stored: String, keys: RedisKeys, url: String, schema: Int = RedisKeys.schemaVersion) -> String {
        let found = Int(stored).map { "key schema \($0)" } ?? "'\(stored)', which is not a schema number"
        return "Redis at \(url): '\(keys.schema)' says the keys under '\(keys.prefix)' were written with \(found), and this build knows "
            + "key schema \(schema) at most; start a build that knows it, or use another --redis-prefix"
    }
}
