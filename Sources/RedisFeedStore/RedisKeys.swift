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
/// | `<prefix>:schema` (outside `v<schema>`) | string | the highest key schema written under the prefix (``RedisSchema``) |
/// | `epoch` | string | random; made at the first start. Missing: Redis lost its data |
/// | `feed:<name>` | hash | `history`, `version`, `snapshot`, `state` |
/// | `batches:<name>` | stream | the replay window: entry id `<version>-0`, field `e` = the batch event |
/// | `writes:<name>` | hash, with a TTL | write id → `done <version> <answer>`: the answers of the feed's recent writes, and ` trimmed` (ms): the latest commit time of an id dropped from it (``RedisScripts/remember``) |
/// | `keyed:<name>`, `drawn:<name>` | sorted set, with a TTL | the ids in `writes:<name>` of clients' `Idempotency-Key`s and of ids the instances drew, scored by commit time (ms, Redis's clock), each capped by count and age |
/// | `write:<name>:<id>` | string, with a TTL | `done <version> <answer>`: a write's answer as builds before issue 51 kept it (read, never written) |
/// | `attempt:<name>:<nonce>` | string, with a TTL | an attempt given up after a lost answer |
/// | `lease:<name>` | string, with a TTL | the fencing token of the instance that runs the feed's source |
/// | `interest:<family>:<shard>` | sorted set, with a TTL | the keys of a family's shard live on some instance, scored by when that ends (ms, Redis's clock) |
/// | `usage` | hash | `feeds`, `bytes`: what `--max-feeds` and `--max-store-bytes` count, over every instance |
/// | `settings` | hash | `replay`, `max-feeds`, `max-feed-bytes`, `max-store-bytes`: the running instances' |
/// | `instances` | sorted set | the running instances' ids, scored by when each one's liveness ends (ms) |
/// | `presence:<name>` | hash, with a TTL | who is present on the feed, per instance: instance id → its share, a presence snapshot (`RedisPresenceSharing`, module `DiffStreamRedis`; issue 55) |
/// | `presence-secret` | string | the secret the presence feeds' item ids are HMACs under, the same on every instance |
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
    /// `<prefix>:schema`: the key-schema marker (``RedisSchema``), outside the versioned namespace so
    /// that a build of every schema reads it.
    public var schema: String { prefix + ":schema" }
    public func feed(_ name: String) -> String { base + Kind.feed + name }
    public func batches(_ name: String) -> String { base + Kind.batches + name }
    /// The key a build before issue 51 kept one write's answer under; read (a retry of a write such a build committed), never written.
    public func write(_ name: String, id: String) -> String { base + Kind.write + name + ":" + id }
    /// The answers of a feed's recent writes, by write id.
    public func writes(_ name: String) -> String { base + Kind.writes + name }
    /// The write ids in ``writes(_:)`` of one kind, by commit time: clients' `Idempotency-Key`s (`keyed`) or drawn ones.
    public func writeOrder(_ name: String, keyed: Bool) -> String { base + (keyed ? Kind.keyed : Kind.drawn) + name }
    public func attempt(_ name: String, nonce: String) -> String { base + Kind.attempt + name + ":" + nonce }
    public func lease(_ name: String) -> String { base + Kind.lease + name }

    /// Appends the keys the scripts that change a feed take (``RedisScripts/commit``'s KEYS 1 to 10) to
    /// `command`: ``feed(_:)``, ``batches(_:)``, ``write(_:id:)``, ``epoch``, ``lease(_:)`` of `lease`,
    /// ``attempt(_:nonce:)``, ``usage``, ``writes(_:)``, then ``writeOrder(_:keyed:)`` of the id's kind
    /// (`keyed`) and of the other. Every commit carries them: each is written straight into the
    /// command (as `String` concatenations they cost a commit about 16,000 instructions).
    public func appendScriptKeys(feed name: String, writeID: String, keyed: Bool = true, attempt nonce: String, lease: String, to command: inout RedisCommand) {
        command.append(concatenating: base, Kind.feed, name)
        command.append(concatenating: base, Kind.batches, name)
        command.append(concatenating: base, Kind.write, name, ":", writeID)
        command.append(concatenating: base, Kind.epoch)
        command.append(concatenating: base, Kind.lease, lease)
        command.append(concatenating: base, Kind.attempt, name, ":", nonce)
        command.append(concatenating: base, Kind.usage)
        command.append(concatenating: base, Kind.writes, name)
        command.append(concatenating: base, keyed ? Kind.keyed : Kind.drawn, name)
        command.append(concatenating: base, keyed ? Kind.drawn : Kind.keyed, name)
    }

    /// What follows ``base`` in each kind of key.
    private enum Kind {
        static let epoch = "epoch", feed = "feed:", batches = "batches:", write = "write:", attempt = "attempt:", lease = "lease:", usage = "usage"
        static let writes = "writes:", keyed = "keyed:", drawn = "drawn:"
    }
    public func channel(_ name: String) -> String { base + "publish:" + name }
    /// A family's shard's live keys (``FamilyInterest``): `set` is `<family>:<shard>`.
    public func interest(_ set: String) -> String { base + "interest:" + set }
    /// The feeds counted against `--max-feeds` and the bytes of every feed, kept by the scripts.
    public var usage: String { base + Kind.usage }
    /// The settings every running instance must agree on (`--replay`, the limits): ``RedisScripts/agree``.
    public var settings: String { base + "settings" }
    /// The running instances: a sorted set of instance ids, scored by the time (ms, Redis's clock)
    /// each one's liveness ends unless renewed.
    public var instances: String { base + "instances" }
}
