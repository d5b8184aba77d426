import Foundation

/// The last snapshot document read for one feed, item by item, so that the next document is read
/// again only where its bytes changed (issue 39: a `PUT` where two items of ten change re-reads two).
///
/// ``WireCodec/decodeSnapshot(_:memo:)`` compares each item of the new document, at its `{`, with the
/// bytes of the item that followed the last one reused (or the one after it: an item inserted or
/// removed loses one comparison, not the rest). Where the bytes are the same, the item is the same:
/// its id, kind and model fingerprint are taken from the memo and its canonical model is copied, not
/// parsed again (an item's reading depends only on its own bytes). Everything else is read and
/// checked as without a memo, and the snapshot is the same as
/// ``WireCodec/decodeSnapshot(_:)-(some Collection<UInt8>)``'s, with the same errors.
///
/// Only a document of at most ``maximumDocumentBytes`` is kept: the memo holds the document's bytes
/// (besides its items, which the feed's snapshot shares), memory that no storage limit counts.
/// Safe to share: writers of one feed that decode at the same time each read the memo and leave
/// theirs; whichever is left, it describes a document that was read.
///
/// `@unchecked Sendable`: its one stored state, `last`, is read and written only under `lock`. (Not a
/// `Mutex`: this module is the client's too, whose systems predate `Synchronization`.)
public final class WireSnapshotMemo: @unchecked Sendable {
    /// The largest document kept (64 KiB).
    public static let maximumDocumentBytes = 64 * 1024

    struct Entry: Sendable {
        /// The document's bytes.
        var document: [UInt8]
        /// Where each item was read from in ``document`` (from `{` to `}`), in document order.
        var spans: [Range<Int>]
        /// What each item was read as, in document order: with one section, that section's own array
        /// of the snapshot (shared, not copied).
        var items: [WireItem]
        /// What it was read as: a document of the same ids in the same order shares its id tables
        /// (``DiffStream/Snapshot/withSameIDs(_:)``). The feed keeps the same snapshot, so this costs no memory
        /// while it is the feed's.
        var snapshot: WireSnapshot
    }

    private let lock = NSLock()
    private var last: Entry?

    public init() {}

    var entry: Entry? {
        lock.lock()
        defer { lock.unlock() }
        return last
    }

    func remember(_ entry: Entry?) {
        lock.lock()
        last = entry
        lock.unlock()
    }

    /// Drops the document kept (the feed was deleted).
    public func forget() { remember(nil) }
}
