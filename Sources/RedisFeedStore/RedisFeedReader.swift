import Redis

/// One feed as Redis holds it.
public struct RedisStoredFeed: Sendable, Equatable {
    public var history: String
    public var version: Int
    public var snapshot: [UInt8]
    public var viewState: [UInt8]?
    /// The replay window, oldest first: `(version, batch event)`, consecutive, ending at `version`
    /// (possibly empty).
    public var batches: [(version: Int, event: [UInt8])]

    public static func == (a: Self, b: Self) -> Bool {
        a.history == b.history && a.version == b.version && a.snapshot == b.snapshot && a.viewState == b.viewState
            && a.batches.map(\.version) == b.batches.map(\.version) && a.batches.map(\.event) == b.batches.map(\.event)
    }
}

/// Reads feeds back from Redis: a whole feed (to load one into the cache, or after a gap), and the
/// batches after a version (to fill a gap, or to resume a client whose id the cache's window no longer
/// holds). Each read is one `MULTI`/`EXEC`, so the hash and the stream are read at one point in time.
public struct RedisFeedReader: Sendable {
    public let client: RedisClient
    public let keys: RedisKeys

    public init(client: RedisClient, keys: RedisKeys) {
        self.client = client
        self.keys = keys
    }

    /// The feed, or nil when Redis has none of that name.
    public func read(_ feed: String) async throws(RedisError) -> RedisStoredFeed? {
        let keys = self.keys
        return try await client.run { connection throws(RedisError) in try Self.read(feed, keys: keys, on: connection) }
    }

    /// ``read(_:)`` on a connection of the caller's (the store's load at start).
    public static func read(_ feed: String, keys: RedisKeys, on connection: RedisConnection) throws(RedisError) -> RedisStoredFeed? {
        let parts = try transaction([["HMGET", keys.feed(feed), "history", "version", "snapshot", "state"], ["XRANGE", keys.batches(feed), "-", "+"]], on: connection)
        guard let fields = parts[0].array, fields.count == 4 else { throw .unexpectedReply(command: "HMGET", reply: parts[0].description) }
        guard let history = fields[0].string, let version = fields[1].integer else { return nil }
        let batches = try Self.entries(parts[1])
        return RedisStoredFeed(history: history, version: version, snapshot: fields[2].bytes ?? [], viewState: fields[3].bytes, batches: batches)
    }

    /// The batches of `history` after `version`, oldest first; `[]` when the feed is at `version`; nil
    /// when the feed is gone, has another history, is behind `version` (lost data), or the window no
    /// longer reaches back to `version + 1` (a snapshot is needed then).
    public func batches(_ feed: String, history: String, after version: Int) async throws(RedisError) -> [(version: Int, event: [UInt8])]? {
        let parts = try await transaction([["HMGET", keys.feed(feed), "history", "version"], ["XRANGE", keys.batches(feed), "\(version + 1)-0", "+"]])
        guard let fields = parts[0].array, fields.count == 2 else { throw .unexpectedReply(command: "HMGET", reply: parts[0].description) }
        guard fields[0].string == history, let current = fields[1].integer, current >= version else { return nil }
        let entries = try Self.entries(parts[1])
        if current == version { return [] }
        guard entries.first?.version == version + 1, entries.last?.version == current, entries.count == current - version else { return nil }
        return entries
    }

    private func transaction(_ commands: [[String]]) async throws(RedisError) -> [RedisReply] {
        try await client.run { connection throws(RedisError) in try Self.transaction(commands, on: connection) }
    }

    /// `MULTI`, the commands, `EXEC` in one pipeline; the answers of the commands.
    static func transaction(_ commands: [[String]], on connection: RedisConnection) throws(RedisError) -> [RedisReply] {
        let all = ([["MULTI"]] + commands + [["EXEC"]]).map { $0.map { Array($0.utf8) } }
        let replies = try connection.pipeline(all)
        // A command refused as it was queued (a full Redis refuses every command queued in MULTI, reads
        // too) is the cause of EXEC's EXECABORT: it is the error, so that `OOM` reads as a full Redis.
        for (command, queued) in zip(commands, replies.dropFirst()) {
            if case .error(let message) = queued { throw .server(command: command[0], message: message) }
        }
        guard let results = replies.last?.array, results.count == commands.count else {
            throw .unexpectedReply(command: "EXEC", reply: replies.last?.description ?? "nothing")
        }
        for (command, result) in zip(commands, results) {
            if case .error(let message) = result { throw .server(command: command[0], message: message) }
        }
        return results
    }

    /// `XRANGE` entries `[id, [field, value]]` → `(version, event)`.
    static func entries(_ reply: RedisReply) throws(RedisError) -> [(version: Int, event: [UInt8])] {
        guard let entries = reply.array else { throw .unexpectedReply(command: "XRANGE", reply: reply.description) }
        var result: [(version: Int, event: [UInt8])] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let pair = entry.array, pair.count == 2, let id = pair[0].string, let version = Int(id.prefix { $0 != "-" }),
                  let fields = pair[1].array, fields.count == 2, let event = fields[1].bytes else {
                throw .unexpectedReply(command: "XRANGE", reply: entry.description)
            }
            result.append((version, event))
        }
        return result
    }
}
