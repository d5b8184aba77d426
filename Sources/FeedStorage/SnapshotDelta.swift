/// A change from one encoded snapshot to the next, as bytes: the new one keeps `prefix` bytes from the
/// start of the old one and `suffix` from its end, with `middle` between. The store writes this
/// instead of the whole snapshot when it is much smaller (one item changed in a large feed), without
/// knowing anything of the encoding.
struct SnapshotDelta: Equatable {
    var prefix: Int
    var suffix: Int
    var middle: [UInt8]

    struct Mismatch: Error {}

    /// The delta from `old` to `new`: the longest common prefix, then the longest common suffix of
    /// what is left. Compared eight bytes at a time, then byte by byte where a word differs (it runs
    /// for every durable write: bytewise it was about 3.5 instructions a byte).
    /// - Complexity: O(n) in the length of the shorter of the two.
    init(from old: [UInt8], to new: [UInt8]) {
        let limit = min(old.count, new.count)
        var prefix = 0, suffix = 0
        old.withUnsafeBytes { a in
            new.withUnsafeBytes { b in
                while prefix + 8 <= limit,
                      a.loadUnaligned(fromByteOffset: prefix, as: UInt64.self) == b.loadUnaligned(fromByteOffset: prefix, as: UInt64.self) {
                    prefix += 8
                }
                while prefix < limit && a[prefix] == b[prefix] { prefix += 1 }
                while suffix + 8 <= limit - prefix,
                      a.loadUnaligned(fromByteOffset: a.count - suffix - 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: b.count - suffix - 8, as: UInt64.self) {
                    suffix += 8
                }
                while suffix < limit - prefix && a[a.count - 1 - suffix] == b[b.count - 1 - suffix] { suffix += 1 }
            }
        }
        self.prefix = prefix
        self.suffix = suffix
        self.middle = Array(new[prefix..<(new.count - suffix)])
    }

    init(prefix: Int, suffix: Int, middle: [UInt8]) {
        self.prefix = prefix
        self.suffix = suffix
        self.middle = middle
    }

    /// The new snapshot. Throws when `old` is not the snapshot this delta was made from (too short).
    /// - Complexity: O(n) in the length of the result.
    func apply(to old: [UInt8]) throws(Mismatch) -> [UInt8] {
        // Compared one at a time: the sum of two values read from a file may overflow.
        guard prefix >= 0, suffix >= 0, prefix <= old.count, suffix <= old.count - prefix else { throw Mismatch() }
        var result: [UInt8] = []
        result.reserveCapacity(prefix + middle.count + suffix)
        result.append(contentsOf: old[0..<prefix])
        result.append(contentsOf: middle)
        result.append(contentsOf: old[(old.count - suffix)...])
        return result
    }
}
