import Redis
import FeedStorage

/// A lease in Redis (`lease:<name>`): the right to run a hosted view model's source on one instance at
/// a time. It is held under a fencing token, which the holder passes with each commit
/// (``RedisFeedWrite/fence``); the commit script refuses any other token, so a holder that stalled
/// past its lease (a paused process) and wakes up cannot write, even at the right version.
public struct RedisLease: Sendable {
    public let client: RedisClient
    public let keys: RedisKeys

    public init(client: RedisClient, keys: RedisKeys) {
        self.client = client
        self.keys = keys
    }

    /// Renews the lease when `token` still holds it (a compare-and-expire); `{1}` or `{0}`.
    static let renewScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('PEXPIRE', KEYS[1], ARGV[2])
          return 1
        end
        return 0
        """

    /// Gives the lease up when `token` still holds it (a compare-and-delete); `{1}` or `{0}`.
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('DEL', KEYS[1])
          return 1
        end
        return 0
        """

    /// The lease a fencing token is of, when it is not the written feed's own: a token of a lease whose
    /// name is not a feed name (a family's shard, `family:home:7`) carries that name after `@`, so that
    /// the commit script checks that lease (``RedisFeedCommitter``); nil for a feed's own lease.
    public static func leaseName(ofToken token: String) -> String? {
        guard let at = token.firstIndex(of: "@") else { return nil }
        return String(token[token.index(after: at)...])
    }

    /// Takes the lease for `milliseconds` if no one holds it (`SET NX PX`).
    /// - Returns: the fencing token to commit with, or nil when another instance holds it.
    public func acquire(_ feed: String, milliseconds: Int) async throws(RedisError) -> String? {
        // A feed's name never holds `:`; any other lease's token names it (``leaseName(ofToken:)``).
        let token = feed.contains(":") ? RandomID.token() + "@" + feed : RandomID.token()
        let reply = try await client.command("SET", keys.lease(feed), token, "NX", "PX", String(milliseconds))
        switch reply {
        case .status("OK"): return token
        case .null: return nil
        default: throw .unexpectedReply(command: "SET NX PX", reply: reply.description)
        }
    }

    /// Extends the lease by `milliseconds` from now. False: it was lost (expired, or taken by another
    /// instance after it expired); the holder must stop its source at once.
    public func renew(_ feed: String, token: String, milliseconds: Int) async throws(RedisError) -> Bool {
        let reply = try await client.command("EVAL", Self.renewScript, "1", keys.lease(feed), token, String(milliseconds))
        guard let held = reply.integer else { throw .unexpectedReply(command: "EVAL (renew lease)", reply: reply.description) }
        return held == 1
    }

    /// Gives the lease up at shutdown, so another instance takes over at once rather than at expiry.
    @discardableResult
    public func release(_ feed: String, token: String) async throws(RedisError) -> Bool {
        let reply = try await client.command("EVAL", Self.releaseScript, "1", keys.lease(feed), token)
        guard let released = reply.integer else { throw .unexpectedReply(command: "EVAL (release lease)", reply: reply.description) }
        return released == 1
    }
}
