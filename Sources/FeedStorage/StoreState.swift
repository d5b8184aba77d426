/// What the log store holds of each feed, in memory: the stored feed, and how many snapshot deltas
/// were written since its last whole snapshot.
struct FeedState: Equatable {
    var feed: StoredFeed
    var windowBytes: Int
    var deltas = 0
    var deltaBytes = 0

    init(_ feed: StoredFeed) {
        self.feed = feed
        windowBytes = feed.batches.reduce(0) { $0 + $1.bytes.count }
    }

    var bytes: Int { feed.snapshot.count + windowBytes + (feed.viewState?.count ?? 0) }
}

/// Every feed as the records so far left it. The one place that says what a record does, used both
/// when committing (so memory matches the disk) and when replaying the files at start.
struct StoreState {
    private(set) var feeds: [String: FeedState] = [:]
    /// The bytes of every snapshot, window and view state: what a checkpoint holds.
    private(set) var liveBytes = 0

    /// A whole snapshot is written after this many deltas, so replaying a feed never chains more.
    static let maxDeltas = 32

    /// A record that does not follow from the state (a delta for a version that is not there).
    struct Broken: Error {
        var feed: String
        var reason: String
    }

    init() {}

    /// The record for a write: the snapshot as a delta from the stored one when that is much smaller.
    func record(for write: FeedWrite) -> StoreRecord {
        switch write {
        case .put(let name, let history, let version, let snapshot, let batch, let keepFrom, let viewState):
            var stored = StoreRecord.Snapshot.full(snapshot)
            if let current = feeds[name], current.feed.history == history, current.feed.version == version - 1, current.deltas < Self.maxDeltas {
                let delta = SnapshotDelta(from: current.feed.snapshot, to: snapshot)
                // Worth it when it is well under half the snapshot, and while the deltas since the last
                // whole snapshot stay under one snapshot's size in all (bounds what a restart replays).
                if delta.middle.count + 32 <= snapshot.count / 2 && current.deltaBytes + delta.middle.count <= snapshot.count {
                    stored = .delta(delta)
                }
            }
            return .put(.init(name: name, history: history, version: version, snapshot: stored, batch: batch, keepFrom: keepFrom, viewState: viewState))
        case .viewState(let name, let bytes):
            return .viewState(name: name, bytes: bytes)
        case .delete(let name):
            return .delete(name: name)
        }
    }

    /// Applies one record.
    /// - Complexity: O(size of the feed's snapshot) for a put; O(1) amortised for its window.
    mutating func apply(_ record: StoreRecord) throws(Broken) {
        switch record {
        case .put(let put):
            // Taken out of the dictionary, so the window below is changed in place, not copied.
            var current = feeds.removeValue(forKey: put.name)
            liveBytes -= current?.bytes ?? 0
            // `&-`: a decoded put's version is at least 1, but a record made in memory need not be.
            let continues = current.map { $0.feed.history == put.history && $0.feed.version == put.version &- 1 } ?? false
            let snapshot: [UInt8]
            var deltas = 0, deltaBytes = 0
            switch put.snapshot {
            case .full(let bytes):
                snapshot = bytes
            case .delta(let delta):
                guard let current, continues, let applied = try? delta.apply(to: current.feed.snapshot) else {
                    if let current { restore(current) }
                    throw Broken(feed: put.name, reason: "version \(put.version) is stored as a change from version \(put.version &- 1), which is not there or does not fit it")
                }
                snapshot = applied
                deltas = current.deltas + 1
                deltaBytes = current.deltaBytes + delta.middle.count
            }
            var next = current ?? FeedState(StoredFeed(name: put.name, history: put.history, version: put.version, snapshot: [], batches: [], viewState: nil))
            current = nil  // `next` holds the only reference to the window now
            if !continues || put.batch == nil {
                next.feed.batches = []
                next.windowBytes = 0
            }
            next.feed.history = put.history
            next.feed.version = put.version
            next.feed.snapshot = snapshot
            next.deltas = deltas
            next.deltaBytes = deltaBytes
            if let batch = put.batch {
                next.feed.batches.append(batch)
                next.windowBytes += batch.bytes.count
                let drop = next.feed.batches.prefix { $0.version < put.keepFrom }.count
                if drop > 0 {
                    next.windowBytes -= next.feed.batches.prefix(drop).reduce(0) { $0 + $1.bytes.count }
                    next.feed.batches.removeFirst(drop)
                }
            }
            if let state = put.viewState { next.feed.viewState = state }
            restore(next)
        case .viewState(let name, let bytes):
            guard var state = feeds[name] else { return }  // as an UPDATE of a missing row: nothing
            state.feed.viewState = bytes
            replace(name, with: state)
        case .delete(let name):
            replace(name, with: nil)
        case .feed(let feed):
            replace(feed.name, with: FeedState(feed))
        case .end:
            break
        }
    }

    /// Sets aside a feed (damaged data): it is gone from the state.
    mutating func remove(_ name: String) {
        replace(name, with: nil)
    }

    /// Every feed starts a new history with an empty window (when damage hid which versions were lost,
    /// so no version number is ever served twice with different content).
    mutating func restartHistories(_ newHistory: () -> String) {
        for name in Array(feeds.keys) {
            guard var state = feeds[name] else { continue }
            state.feed.history = newHistory()
            state.feed.batches = []
            state.windowBytes = 0
            replace(name, with: state)
        }
    }

    private mutating func restore(_ state: FeedState) {
        liveBytes += state.bytes
        feeds[state.feed.name] = state
    }

    private mutating func replace(_ name: String, with state: FeedState?) {
        liveBytes -= feeds[name]?.bytes ?? 0
        liveBytes += state?.bytes ?? 0
        feeds[name] = state
    }

    /// The feeds, sorted by name.
    var storedFeeds: [StoredFeed] {
        feeds.keys.sorted().compactMap { feeds[$0]?.feed }
    }
}
