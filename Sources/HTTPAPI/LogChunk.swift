/// Where the batches of one log read end: at the next multiple of ``size`` after the position, or at
/// the head before it. Readers that start anywhere then meet at the same positions (the same URLs,
/// one cache entry each) after one read, and a chunk that ends at a multiple never changes.
package enum LogChunk {
    /// Versions per chunk.
    package static let size = 64

    /// The last version of the chunk read after version `after` when the feed is at `head`:
    /// `min(head, (after / size + 1) * size)` (never before `after`).
    package static func end(after: Int, head: Int) -> Int {
        max(after, min(head, boundary(after: after)))
    }

    /// The multiple of ``size`` that ends the chunk after `after`.
    package static func boundary(after: Int) -> Int {
        (after / size + 1) * size
    }

    /// Whether the batches after `after` through `end` are a whole chunk: they end at its boundary,
    /// so they never change (`immutable`).
    package static func isComplete(after: Int, end: Int) -> Bool {
        end > after && end == boundary(after: after)
    }
}
