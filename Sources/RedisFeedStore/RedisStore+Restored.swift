import FeedStorage
import Redis

extension RedisStore {
    /// What ``startNewHistories(url:keys:timeout:)`` did.
    public struct NewHistories: Sendable, Equatable {
        /// Feeds (family members among them) that start a new history.
        public var feeds: Int
    }

    /// After Redis was put back from an older RDB or AOF (`diffstream restore --redis`,
    /// docs/deploy-redis.md): gives every feed under `keys` a new history, one version on, so that
    /// no (history, version) a client saw before the restore names another state now. A client
    /// resuming from any id it holds then gets a snapshot, never batches computed from a version it
    /// never had. Running instances hear of each new history as of any commit (its `publish:`
    /// message) and resync their subscribers.
    ///
    /// Safe while instances run and write: each feed's step is ``RedisScripts/newHistory``, which
    /// does nothing if the feed moved since it was read; the feed is then read again (a write made
    /// after the restore is on a history this command has not started, so it still gets one).
    /// - Complexity: one `SCAN` pass, then one `HMGET` and one script per feed.
    public static func startNewHistories(url: RedisURL, keys: RedisKeys, timeout: Double = 2) async throws(RedisError) -> NewHistories {
        let client = RedisClient(url: url, timeout: timeout, name: "redis-restored")
        defer { client.stop() }
        let committer = RedisFeedCommitter(client: client, keys: keys)
        guard let epoch = try await client.command("GET", keys.epoch).string else { return NewHistories(feeds: 0) }  // no epoch: nothing kept
        var started = 0
        for name in try await feedNames(client, keys: keys) {
            var settled = false
            for _ in 0..<100 where !settled {  // each pass that finds the feed moved reads it again
                let fields = try await client.command("HMGET", keys.feed(name), "history", "version").array ?? []
                guard let history = fields.first?.string, let version = fields.dropFirst().first?.string.flatMap({ Int($0) }), version > 0 else {
                    settled = true  // deleted meanwhile: nothing to restart
                    break
                }
                let outcome = try await committer.newHistory(feed: name, epoch: epoch, from: history, at: version, to: RandomID.history())
                if case .committed = outcome {
                    started += 1
                    settled = true
                }
                if case .epochChanged(let current) = outcome {
                    throw .unexpectedReply(command: "EVALSHA (new history of \(name))",
                                           reply: "the epoch changed to \(current ?? "none") meanwhile: Redis lost its data, so no history is left to restart")
                }
            }
            if !settled {
                throw .unexpectedReply(command: "EVALSHA (new history of \(name))",
                                       reply: "the feed was written 100 times while its history was being restarted; run the command again")
            }
        }
        return NewHistories(feeds: started)
    }
}
