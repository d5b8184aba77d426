import DiffStreamServer
import FeedStorage
import Logging
import Presence
import Redis
import RedisFeedStore

/// Keeps every feed in Redis, so several instances serve them together (`--redis`,
/// docs/deploy-redis.md):
///
/// ```swift
/// configuration.sharing = RedisSharing(url: "redis://redis:6379")
/// ```
///
/// At start: a malformed URL or prefix, an evicting `maxmemory-policy`, keys written with a newer key
/// schema (``RedisSchema``), or settings unlike the other instances' stop the start; a Redis that
/// cannot be reached is tried again every 2 seconds, said in
/// the log, until it answers or the server is stopped (an orchestrator starts both at once).
public struct RedisSharing: FeedSharing {
    /// `redis://[user:password@]host[:port][/db]` (`--redis`, `DIFFSTREAM_REDIS`).
    public var url: String
    /// The prefix of every key, so several deployments share one Redis (`--redis-prefix`).
    public var prefix: String
    /// Seconds every Redis call may take before it counts as failed.
    public var timeout: Double

    /// Feeds in the Redis at `url`, under keys that start with `prefix`.
    public init(url: String, prefix: String = "diffstream", timeout: Double = 2) {
        self.url = url
        self.prefix = prefix
        self.timeout = timeout
    }

    /// After Redis was put back from an older RDB or AOF (`diffstream restore --redis`): every feed and
    /// family member kept under ``prefix`` starts a new history (``RedisStore/startNewHistories(url:keys:timeout:)``),
    /// so clients holding ids from after the copy get a snapshot. Works while instances run. Refused,
    /// like a start, for a malformed URL or prefix or keys of a newer schema.
    /// - Returns: how many feeds start a new history.
    public func startNewHistories() async throws(Server.StartError) -> Int {
        let url: RedisURL
        do { url = try RedisURL(parsing: self.url) } catch { throw Server.StartError(.redis, "--redis: \(error.description)") }
        if let problem = RedisKeys.problem(withPrefix: prefix) { throw Server.StartError(.redis, "--redis-prefix '\(prefix)': \(problem)") }
        let keys = RedisKeys(prefix: prefix)
        let client = RedisClient(url: url, timeout: timeout, name: "redis-check")
        defer { client.stop() }
        let verdict: RedisSchema.Verdict
        do throws(RedisError) {
            verdict = try await client.run { connection throws(RedisError) in try RedisSchema.check(connection, keys: keys) }
        } catch {
            throw Server.StartError(.redis, "Redis at \(url): \(error.description)")
        }
        if case .newer(let stored) = verdict { throw Server.StartError(.redis, RedisSchema.refusal(stored: stored, keys: keys, url: url.description)) }
        do throws(RedisError) {
            return try await RedisStore.startNewHistories(url: url, keys: keys, timeout: timeout).feeds
        } catch {
            throw Server.StartError(.redis, "Redis at \(url): \(error.description)")
        }
    }

    /// 1 GiB: counted over every instance, so it cannot follow one machine's memory or disk; set
    /// ``Server/Configuration/maxStoreBytes`` to fit Redis's `maxmemory`.
    public var defaultMaxStoreBytes: Int { 1 << 30 }

    public func open(_ start: SharingStart) async throws(Server.StartError) -> OpenedSharing {
        let url: RedisURL
        do { url = try RedisURL(parsing: self.url) } catch { throw Server.StartError(.redis, "--redis: \(error.description)") }
        if let problem = RedisKeys.problem(withPrefix: prefix) {
            throw Server.StartError(.redis, "--redis-prefix '\(prefix)': \(problem)")
        }
        let keys = RedisKeys(prefix: prefix)
        let logger = start.logger
        let settings = [("replay", String(start.replay)), ("max-feeds", String(start.maxFeeds)),
                        ("max-feed-bytes", String(start.maxFeedBytes)), ("max-store-bytes", String(start.maxStoreBytes))]
        if start.dataDirectory != nil { logger.info("feeds are kept in Redis at \(url) under '\(keys.base)'; the data directory is not used") }
        let timeout = self.timeout
        /// One try: the store, or why the start must stop.
        func connect() async throws(RedisError) -> Result<(RedisStore, RedisPresenceSharing), Server.StartError> {
            let client = RedisClient(url: url, timeout: timeout, name: "redis-check")
            defer { client.stop() }
            let check = try await RedisServerCheck.run(client)
            for warning in check.warnings { logger.warning("\(warning)") }
            if !check.errors.isEmpty { return .failure(Server.StartError(.redis, check.errors.joined(separator: "; "))) }
            let verdict = try await client.run { connection throws(RedisError) in try RedisSchema.check(connection, keys: keys) }
            if case .newer(let stored) = verdict {
                return .failure(Server.StartError(.redis, RedisSchema.refusal(stored: stored, keys: keys, url: url.description)))
            }
            let instance = RandomID.token()
            let differing = try RedisStore.agree(on: settings, url: url, keys: keys, instance: instance, timeout: timeout)
            if !differing.isEmpty {
                return .failure(Server.StartError(.redis, "settings differ from the running instances' (every instance sharing Redis needs the same; "
                    + "once none is running, the next start's are taken): \(differing.joined(separator: "; "))"))
            }
            let presence = try await RedisPresenceSharing.open(url: url, keys: keys, instance: instance, timeout: timeout)
            return .success((try RedisStore.open(url: url, keys: keys, instanceID: instance, settings: settings, onSettingsConflict: { differing in
                logger.error("settings differ from a running instance's (it started while Redis held no instance's liveness): \(differing.joined(separator: "; ")); stop the instances whose settings are not wanted")
            }, replay: start.replay, maxFeeds: start.maxFeeds, maxBytes: start.maxStoreBytes, timeout: timeout), presence))
        }
        while true {
            let outcome: Result<(RedisStore, RedisPresenceSharing), Server.StartError>
            do throws(RedisError) {
                outcome = try await connect()
            } catch {
                if case .server = error, !error.temporarilyRefused {
                    throw Server.StartError(.redis, "Redis at \(url) refused the start: \(error.description)")
                }
                logger.warning("Redis at \(url) is not reachable (\(error.description)); retrying every 2 s")
                if await start.stopRequested(within: .seconds(2)) { throw Server.StartError(.stopped, "stopped while waiting for Redis at \(url)") }
                continue
            }
            switch outcome {
            case .success(let (store, presence)):
                logger.info("feeds are kept in Redis at \(url) under '\(keys.base)' (epoch \(store.epoch))")
                return OpenedSharing(store: store, close: { store.close(); presence.close() }, presence: presence)
            case .failure(let error):
                throw error
            }
        }
    }
}
