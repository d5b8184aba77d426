import FeedStorage
import Presence
import Redis
import RedisFeedStore

/// What each instance knows of a feed's presence, kept in Redis (issue 55, docs/protocol.md "Who is
/// here"): the hash `P:v1:presence:FEED` holds one field per instance, its share (a presence
/// snapshot), written again every presence interval while the instance holds the feed; the key lapses a
/// minute after the last write. A share counts while its instance is alive in `instances` (renewed every
/// second for 5 s): an instance killed with `kill -9` stops counting within 5 s, and its field is
/// removed by a later read. The item ids' secret is the deployment's, `P:v1:presence-secret`, drawn by
/// the first instance.
///
/// Like Phoenix Presence, each node's share is its own and the merge is every reader's (no node is a
/// single point of failure); unlike it, a node's loss is told by Redis's liveness set, not by
/// gossip, and its users leave at once (no grace: their streams are gone).
final class RedisPresenceSharing: PresenceSharing {
    let secret: [UInt8]
    private let client: RedisClient
    private let keys: RedisKeys
    private let instance: String

    /// Milliseconds a feed's hash lives after its last write.
    static let keyMilliseconds = 60_000

    /// Sets the deployment's secret if none is (`SET NX`), then reads it.
    static let secretScript = """
        redis.call('SET', KEYS[1], ARGV[1], 'NX')
        return redis.call('GET', KEYS[1])
        """

    /// KEYS: 1 the feed's hash, 2 `instances`. ARGV: 1 this instance. The shares of the other live
    /// instances (Redis's clock); fields of instances gone a minute or more are removed.
    static let sharesScript = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local fields = redis.call('HGETALL', KEYS[1])
        local shares = {}
        for i = 1, #fields, 2 do
          if fields[i] ~= ARGV[1] then
            local until_ = redis.call('ZSCORE', KEYS[2], fields[i])
            if until_ and tonumber(until_) > now then
              table.insert(shares, fields[i + 1])
            elseif not until_ or tonumber(until_) < now - 60000 then
              redis.call('HDEL', KEYS[1], fields[i])
            end
          end
        end
        return shares
        """

    private init(secret: [UInt8], client: RedisClient, keys: RedisKeys, instance: String) {
        self.secret = secret
        self.client = client
        self.keys = keys
        self.instance = instance
    }

    /// The sharing of the instance `instance`, with the deployment's secret (drawn if none is yet).
    static func open(url: RedisURL, keys: RedisKeys, instance: String, timeout: Double) async throws(RedisError) -> RedisPresenceSharing {
        let client = RedisClient(url: url, timeout: timeout, name: "redis-presence")
        let reply: RedisReply
        do throws(RedisError) {
            reply = try await client.command("EVAL", secretScript, "1", keys.base + "presence-secret", RandomID.token())
        } catch {
            client.stop()
            throw error
        }
        guard case .bulk(let secret) = reply else {
            client.stop()
            throw RedisError.unexpectedReply(command: "EVAL presence secret", reply: reply.description)
        }
        return RedisPresenceSharing(secret: secret, client: client, keys: keys, instance: instance)
    }

    func publish(feed: String, share: [UInt8]?) async {
        let key = Array((keys.base + "presence:" + feed).utf8)
        if let share {
            _ = try? await client.command([Array("HSET".utf8), key, Array(instance.utf8), share])
            _ = try? await client.command([Array("PEXPIRE".utf8), key, Array(String(Self.keyMilliseconds).utf8)])
        } else {
            _ = try? await client.command([Array("HDEL".utf8), key, Array(instance.utf8)])
        }
    }

    /// The other live instances' shares; none while Redis cannot be reached (this instance's own
    /// streams are then all the presence feed shows).
    func shares(of feed: String) async -> [[UInt8]] {
        guard case .array(let replies)? = try? await client.command("EVAL", Self.sharesScript, "2", keys.base + "presence:" + feed, keys.instances, instance) else { return [] }
        return replies.compactMap { if case .bulk(let bytes) = $0 { bytes } else { nil } }
    }

    func close() {
        client.stop()
    }
}
