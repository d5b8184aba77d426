/// How a family's keys are spread over lease shards with a store several instances share (decision
/// 0008): a key's sources run on the instance holding its shard's lease, so leases are renewed per
/// shard, not per key. Pure: the shard of a key is the same on every instance and every run.
public struct FamilyShards: Sendable, Equatable {
    /// The shards of a family unless said otherwise.
    public static let defaultCount = 64
    /// The shards, `0..<count`.
    public let count: Int

    /// - Parameter count: 1 to 4096 shards.
    public init(count: Int = Self.defaultCount) {
        precondition((1...4096).contains(count), "a family has 1 to 4096 shards")
        self.count = count
    }

    /// The shard of `key`: its FNV-1a hash (64 bits, over its UTF-8) modulo ``count``, the same on
    /// every platform and run (Swift's `Hasher` is seeded per process).
    public func shard(of key: String) -> Int {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return Int(hash % UInt64(count))
    }

    /// `keys` by shard (a shard with none is absent).
    public func group(_ keys: some Sequence<String>) -> [Int: [String]] {
        Dictionary(grouping: keys) { shard(of: $0) }
    }

    /// The name of the lease of `family`'s shard `shard`: `family:<prefix>:<shard>` (a feed name never
    /// holds `:`, so it is no feed's lease).
    public static func leaseName(family prefix: String, shard: Int) -> String {
        "family:\(prefix):\(shard)"
    }

    /// The name of the set of `family`'s shard `shard`'s live keys (``FamilyInterest``): `<prefix>:<shard>`.
    public static func interestSet(family prefix: String, shard: Int) -> String {
        "\(prefix):\(shard)"
    }

    /// An entry of a shard's set of live keys: `<key> <instance>` (a key, part of a feed name, never
    /// holds a space), so that each instance tells the keys live elsewhere from its own.
    public static func interestEntry(key: String, instance: String) -> String {
        key + " " + instance
    }

    /// The keys of `entries` (``interestEntry(key:instance:)``) recorded by an instance other than
    /// `instance`, sorted, each once.
    public static func keysLiveElsewhere(_ entries: [String], instance: String) -> [String] {
        Set(entries.compactMap { entry -> String? in
            guard let space = entry.firstIndex(of: " "), entry[entry.index(after: space)...] != instance else { return nil }
            return String(entry[..<space])
        }).sorted()
    }

    /// What an instance does on each renewal, given its live keys, the shards whose lease it holds, and
    /// the keys recorded live on other instances in each shard it holds:
    /// - `make`: the keys of its held shards live elsewhere and not here, sorted: made live here, so
    ///   that their sources run here;
    /// - `keep`: the shards whose lease it keeps (or tries to take): those with a key live here, and
    ///   those it holds where any key is live.
    public func duty(live: Set<String>, held: Set<Int>, interest: [Int: [String]]) -> (make: [String], keep: Set<Int>) {
        var keep = Set(live.map { shard(of: $0) })
        var make: [String] = []
        for shard in held {
            let keys = interest[shard] ?? []
            if !keys.isEmpty { keep.insert(shard) }
            make += keys.filter { !live.contains($0) && self.shard(of: $0) == shard }
        }
        return (make.sorted(), keep)
    }
}
