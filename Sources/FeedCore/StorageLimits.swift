import FeedStorage
import Foundation

/// How much the feeds may hold, all counted in **encoded** bytes (the JSON a client would receive):
/// a feed's snapshot plus the batches in its replay window.
///
/// | limit | flag | default | past it |
/// |-------|------|---------|---------|
/// | ``maxFeeds`` | `--max-feeds` | 10,000 | `507`, nothing created |
/// | ``maxFeedBytes`` | `--max-feed-bytes` | 8 MiB | `507`, the feed unchanged |
/// | ``maxStoreBytes`` | `--max-store-bytes` | a quarter of the memory (``defaultMaxStoreBytes(memoryBytes:)``) | `507`, nothing changed |
public struct StorageLimits: Sendable, Equatable {
    /// The most feeds clients may create. Feeds the server hosts itself (view models) do not count.
    public var maxFeeds: Int
    /// The largest snapshot one feed may hold, encoded.
    public var maxFeedBytes: Int
    /// All feeds' snapshots and replay windows together, encoded; a family's members kept on disk
    /// count with their state (``StorageAccount/count(kept:)``).
    public var maxStoreBytes: Int

    public init(maxFeeds: Int = 10_000, maxFeedBytes: Int = 8 << 20, maxStoreBytes: Int = StorageLimits.defaultMaxStoreBytes()) {
        self.maxFeeds = maxFeeds
        self.maxFeedBytes = maxFeedBytes
        self.maxStoreBytes = maxStoreBytes
    }

    /// A quarter of `memoryBytes` (by default the memory this process may use: the machine's, or the
    /// cgroup's limit when lower, as in a container), and at least 64 MiB. Encoded bytes are what is
    /// counted; the parsed snapshots in memory take about two to four times as much, so a quarter keeps
    /// the process well inside the machine.
    public static func defaultMaxStoreBytes(memoryBytes: Int = SystemMemory.available()) -> Int {
        max(64 << 20, memoryBytes / 4)
    }

    /// With a durable store in `dataDirectory`: the smaller of the memory default and half of the
    /// space free on its file system now (the feeds live both in memory and on disk; the store's
    /// write-ahead log and compaction need room too). Without one: the memory default.
    public static func defaultMaxStoreBytes(dataDirectory: String?) -> Int {
        let memory = defaultMaxStoreBytes()
        guard let dataDirectory, let free = SystemMemory.freeDiskBytes(near: dataDirectory) else { return memory }
        return max(64 << 20, min(memory, free / 2))
    }
}

/// The memory this process may use.
public enum SystemMemory {
    /// Physical memory, or the cgroup v2 (`memory.max`) or v1 (`memory.limit_in_bytes`) limit when
    /// that is lower. Falls back to 1 GiB when neither can be read.
    public static func available() -> Int {
        let physical = ProcessInfo.processInfo.physicalMemory
        var memory = physical > 0 ? (physical > UInt64(Int.max) ? Int.max : Int(physical)) : 1 << 30
        for path in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
            if let limit = readNumber(path), limit > 0, limit < memory { memory = limit }
        }
        return memory
    }

    /// Bytes free for an unprivileged user on the file system holding `path` (or its nearest existing
    /// parent), or nil if that cannot be read.
    public static func freeDiskBytes(near path: String) -> Int? {
        var candidate = path.isEmpty ? "." : path
        while true {
            if let attributes = try? FileManager.default.attributesOfFileSystem(forPath: candidate),
               let free = attributes[.systemFreeSize] as? NSNumber {
                return free.int64Value > Int64(Int.max) ? Int.max : Int(free.int64Value)
            }
            guard let slash = candidate.lastIndex(of: "/") else {
                if candidate == "." { return nil }
                candidate = "."
                continue
            }
            candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
        }
    }

    private static func readNumber(_ path: String) -> Int? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return Int(String(decoding: data.prefix(64), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// A write refused because it would pass a ``StorageLimits`` limit (answered with `507`).
public struct StorageLimitExceeded: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Limit: String, Sendable, CaseIterable {
        case maxFeeds = "max-feeds"
        case maxFeedBytes = "max-feed-bytes"
        case maxStoreBytes = "max-store-bytes"
    }

    /// Which limit.
    public var limit: Limit
    /// Its configured value.
    public var value: Int
    /// What the write would have needed, in feeds or bytes.
    public var needed: Int

    public init(limit: Limit, value: Int, needed: Int) {
        self.limit = limit
        self.value = value
        self.needed = needed
    }

    public var description: String {
        switch limit {
        case .maxFeeds:
            "the server already holds the most feeds it may (--max-feeds \(value)); delete a feed to make room"
        case .maxFeedBytes:
            "the snapshot is \(needed) bytes encoded, more than one feed may hold (--max-feed-bytes \(value))"
        case .maxStoreBytes:
            "the feeds would hold \(needed) bytes, more than the store may (--max-store-bytes \(value)); delete feeds to make room"
        }
    }
}

/// Why a write to a feed did not happen; nothing changed either way.
public enum FeedWriteError: Error, Sendable, Equatable {
    /// The durable store could not commit it (`503`).
    case store(StoreError)
    /// It would pass a storage limit (`507`).
    case limit(StorageLimitExceeded)
    /// A shared store holds another version or view-model state than the write was computed from
    /// (``FeedWriteOptions/basis``): compute it again. Also after too many lost races in a row.
    case conflict
    /// The feed's lease is held by another instance (``FeedWriteOptions/fence``): stop the source.
    case fenced
    /// The write's `Idempotency-Key` was kept for another request (``FeedWriteOptions/request``):
    /// nothing was written (`422`).
    case idempotencyKeyReused
    /// `limit` writes already wait for this feed's turn (its writers outrun it): nothing was written;
    /// try again shortly (`429` with `Retry-After`).
    case busy(limit: Int)
}
