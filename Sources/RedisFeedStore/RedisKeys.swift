import Redis

/// The names of everything DiffStream keeps in Redis, under `--redis-prefix` and a key-schema version.
///
/// `<prefix>:v<schema>:` starts every key and channel, so instances of two schema versions (a rolling
/// upgrade that changes the layout) never read each other's keys, and two deployments on one Redis
/// stay apart by prefix. Feed names are `A-Z a-z 0-9 . _ -` (docs/protocol.md), never `:`, so a name
/// ends a key unambiguously; a write id (an `Idempotency-Key` may hold anything) comes after it.
///
/// | key | type | holds |
/// |-----|------|-------|
/// | `epoch` | string | random; made at the first start. Missing: Redis lost its data |
/// | `feed:<name>` | hash | `history`, `version`, `snapshot`, `state` |
/// | `batches:<name>` | stream | the replay window: entry id `<version>-0`, field `e` = the batch event |
/// | `write:<name>:<id>` | string, with a TTL | `done <version> <answer>`: a committed write's answer |
/// | `attempt:<name>:<nonce>` | string, with a TTL | an attempt given up after a lost answer |
/// | `lease:<name>` | string, with a TTL | the fencing token of the instance that runs the feed's source |
/// | `interest:<family>:<shard>` | sorted set, with a TTL | the keys of a family's shard live on some instance, scored by when that ends (ms, Redis's clock) |
/// | `usage` | hash | `feeds`, `bytes`: what `--max-feeds` and `--max-store-bytes` count, over every instance |
/// | `settings` | hash | `replay`, `max-feeds`, `max-feed-bytes`, `max-store-bytes`: the running instances' |
/// | `instances` | sorted set | the running instances' ids, scored by when each one's presence ends (ms) |
/// | channel `publish:<name>` | pub/sub | `<history> <version> <batch, snapshot, state lengths> <instance>\n<batch><snapshot><state>` after each commit; `<history> 0\n` after a delete |
public struct RedisKeys: Sendable, Equatable {
    /// The key schema this build writes and reads.
    public static let schemaVersion = 1
    /// `--redis-prefix`.
    public let prefix: String
    /// `<prefix>:v<schema>:`.
    public let base: String

    /// Why `prefix` cannot be a `--redis-prefix`, or nil when it can: 1 to 128 visible ASCII
    /// characters (`:` too, as in `myapp:diffstream`), none of `* ? [ ] \\`, which `SCAN MATCH`
    /// would read as a pattern.
    public static func problem(withPrefix prefix: String) -> String? {
        guard (1...128).contains(prefix.utf8.count) else { return "it must be 1 to 128 characters" }
        guard prefix.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else { return "it must be visible ASCII, without spaces" }
        guard !prefix.contains(where: { "*?[]\\".contains($0) }) else { return "it must not hold * ? [ ] or \\ (SCAN MATCH patterns)" }
        return nil
    }

    public init(prefix: String = "diffstream") {
        self.prefix = prefix
        self.base = "\(prefix):v\(Self.schemaVersion):"
    }

    public var epoch: String { base + Kind.epoch }
    public func feed(_ name: String) -> String { base + Kind.feed + name }
    public func batches(_ name: String) -> String { base + Kind.batches + name }
    public func write(_ name: String, id: String) -> String { base + Kind.write + name + ":" + id }
    public func attempt(_ name: String, nonce: String) -> String { base + Kind.attempt + name + ":" + nonce }
    public func lease(_ name: String) -> String { base + Kind.lease + name }

    /// Appends the keys the scripts that change a feed take (``RedisScripts/commit``'s KEYS 1 to 7) to
    /// `command`: ``feed(_:)``, ``batches(_:)``, ``write(_:id:)``, ``epoch``, ``lease(_:)`` of `lease`,
    /// ``attempt(_:nonce:)`` and ``usage``. Every commit carries them: each is written straight into the
    /// command (as `String` concatenations they cost a commit about 16,000 instructions).
    public func appendScriptKeys(feed name: String, writeID: String, attempt nonce: String, lease: String, to command: inout RedisCommand) {
        command.append(concatenating: base, Kind.feed, name)
        command.append(concatenating: base, Kind.batches, name)
        command.append(concatenating: base, Kind.write, name, ":", writeID)
        command.append(concatenating: base, Kind.epoch)
        command.append(concatenating: base, Kind.lease, lease)
        command.append(concatenating: base, Kind.attempt, name, ":", nonce)
        command.append(concatenating: base, Kind.usage)
    }

    /// What follows ``base`` in each kind of key.
    private enum Kind {
        static let epoch = "epoch", feed = "feed:", batches = "batches:", write = "write:", attempt = "attempt:", lease = "lease:", usage = "usage"
    }
    public func channel(_ name: String) -> String { base + "publish:" + name }
    /// A family's shard's live keys (``FamilyInterest``): `set` is `<family>:<shard>`.
    public func interest(_ set: String) -> String { base + "interest:" + set }
    /// The feeds counted against `--max-feeds` and the bytes of every feed, kept by the scripts.
    public var usage: String { base + Kind.usage }
    /// The settings every running instance must agree on (`--replay`, the limits): ``RedisScripts/agree``.
    public var settings: String { base + "settings" }
    /// The running instances: a sorted set of instance ids, scored by the time (ms, Redis's clock)
    /// each one's presence ends unless renewed.
    public var instances: String { base + "instances" }
}
