/// A family member's replay window as ``MemberStore`` keeps it: every batch in one blob of the
/// member's row, and the rule a put changes it by.
///
/// The blob is empty for an empty window; otherwise a 32-bit count, then per batch its version (64
/// bits) and its bytes (a 32-bit length, then the bytes), little-endian (``ByteWriter``).
enum MemberWindow {
    /// The blob of `batches`.
    /// - Complexity: O(the batches' bytes).
    static func encode(_ batches: [StoredBatch]) -> [UInt8] {
        guard !batches.isEmpty else { return [] }
        var writer = ByteWriter(capacity: 4 + batches.reduce(0) { $0 + 12 + $1.bytes.count })
        writer.u32(UInt32(batches.count))
        for batch in batches {
            writer.int(batch.version)
            writer.data(batch.bytes)
        }
        return writer.bytes
    }

    /// The batches of a blob ``encode(_:)`` wrote; nil when it is not one (damaged).
    /// - Complexity: O(the blob's length).
    static func decode(_ bytes: [UInt8]) -> [StoredBatch]? {
        guard !bytes.isEmpty else { return [] }
        var reader = ByteReader(bytes)
        do throws(ByteReader.Truncated) {
            let count = Int(try reader.u32())
            var batches: [StoredBatch] = []
            batches.reserveCapacity(min(count, reader.remaining / 12))
            for _ in 0..<count {
                let version = try reader.int()
                batches.append(StoredBatch(version: version, bytes: try reader.data()))
            }
            return reader.remaining == 0 ? batches : nil
        } catch {
            return nil
        }
    }

    /// The window after a put of `version` in `history`, as ``LogFeedStore`` keeps it: a put that does
    /// not continue the stored history at the next version, or that has no batch, starts an empty
    /// window; then the batch joins it, batches older than `keepFrom` leave it, and at most
    /// `maxBatches` of the newest stay.
    /// - Complexity: O(`maxBatches`).
    static func afterPut(stored: (history: String, version: Int, batches: [StoredBatch])?, history: String, version: Int, batch: StoredBatch?,
                         keepFrom: Int, maxBatches: Int) -> [StoredBatch] {
        guard let batch, let stored, stored.history == history, stored.version &+ 1 == version else {
            return batch.map { keepFrom <= $0.version && maxBatches > 0 ? [$0] : [] } ?? []
        }
        var batches = stored.batches
        batches.append(batch)
        let old = batches.prefix { $0.version < keepFrom }.count
        let over = max(0, batches.count - old - maxBatches)
        batches.removeFirst(old + over)
        return batches
    }
}
