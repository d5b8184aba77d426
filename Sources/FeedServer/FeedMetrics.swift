import FeedStore
import Synchronization

/// Feed counters for `/metrics`: subscribers per feed, batches, resyncs, diff time.
public final class FeedMetrics: Sendable {
    private struct State {
        var subscribers: [String: Int] = [:]
        var batches: [String: Int] = [:]
        var diffSeconds = 0.0
        var diffs = 0
        var resyncs = 0
    }

    private let state = Mutex(State())
    private let storeSlot = Mutex<(any FeedStore)?>(nil)

    public init() {}

    /// The store whose counters `/metrics` shows (set by the registry).
    var store: (any FeedStore)? {
        get { storeSlot.withLock { $0 } }
        set { storeSlot.withLock { $0 = newValue } }
    }

    func setSubscribers(_ feed: String, _ count: Int) { state.withLock { $0.subscribers[feed] = count } }
    func recordBatch(_ feed: String) { state.withLock { $0.batches[feed, default: 0] += 1 } }
    func recordResync() { state.withLock { $0.resyncs += 1 } }
    func removeFeed(_ feed: String) { state.withLock { $0.subscribers[feed] = nil } }
    func recordDiff(seconds: Double) {
        state.withLock {
            $0.diffSeconds += seconds
            $0.diffs += 1
        }
    }

    /// Prometheus text exposition lines.
    func exposition() -> String {
        let copy = state.withLock { $0 }
        var text = "# HELP diffstream_feed_subscribers Open event streams per feed.\n# TYPE diffstream_feed_subscribers gauge\n"
        for (feed, count) in copy.subscribers.sorted(by: { $0.key < $1.key }) {
            text += "diffstream_feed_subscribers{feed=\"\(feed)\"} \(count)\n"
        }
        text += "# HELP diffstream_feed_batches_total Batches published per feed.\n# TYPE diffstream_feed_batches_total counter\n"
        for (feed, count) in copy.batches.sorted(by: { $0.key < $1.key }) {
            text += "diffstream_feed_batches_total{feed=\"\(feed)\"} \(count)\n"
        }
        text += "# HELP diffstream_diff_seconds Time spent diffing snapshots.\n# TYPE diffstream_diff_seconds summary\n"
        text += "diffstream_diff_seconds_sum \(copy.diffSeconds)\ndiffstream_diff_seconds_count \(copy.diffs)\n"
        text += "# HELP diffstream_resyncs_total Slow subscribers caught up with a fresh snapshot.\n# TYPE diffstream_resyncs_total counter\n"
        text += "diffstream_resyncs_total \(copy.resyncs)\n"
        if let store = store?.metrics() {
            text += "# HELP diffstream_store_commits_total Store commits (one fsync each).\n# TYPE diffstream_store_commits_total counter\n"
            text += "diffstream_store_commits_total \(store.commits)\n"
            text += "# HELP diffstream_store_writes_total Writes made durable; divided by commits, the writes per commit.\n# TYPE diffstream_store_writes_total counter\n"
            text += "diffstream_store_writes_total \(store.writes)\n"
            text += "# HELP diffstream_store_writes_per_commit Average writes per commit (group commit).\n# TYPE diffstream_store_writes_per_commit gauge\n"
            text += "diffstream_store_writes_per_commit \(store.commits > 0 ? Double(store.writes) / Double(store.commits) : 0)\n"
            text += "# HELP diffstream_store_writes_per_commit_max Most writes in one commit.\n# TYPE diffstream_store_writes_per_commit_max gauge\n"
            text += "diffstream_store_writes_per_commit_max \(store.maxWritesPerCommit)\n"
            text += "# HELP diffstream_store_failed_commits_total Commits that failed (full disk, I/O error).\n# TYPE diffstream_store_failed_commits_total counter\n"
            text += "diffstream_store_failed_commits_total \(store.failedCommits)\n"
            text += "# HELP diffstream_store_commit_seconds Time from a commit's start to its fsync's end.\n# TYPE diffstream_store_commit_seconds summary\n"
            text += "diffstream_store_commit_seconds_sum \(store.commitSeconds)\ndiffstream_store_commit_seconds_count \(store.commits)\n"
            text += "# HELP diffstream_store_size_bytes Bytes of the store's files on disk.\n# TYPE diffstream_store_size_bytes gauge\n"
            text += "diffstream_store_size_bytes \(store.sizeBytes)\n"
            text += "# HELP diffstream_store_compactions_total Checkpoints written to compact the store's log.\n# TYPE diffstream_store_compactions_total counter\n"
            text += "diffstream_store_compactions_total \(store.compactions)\n"
            text += "# HELP diffstream_store_failed_compactions_total Compactions that failed (tried again later).\n# TYPE diffstream_store_failed_compactions_total counter\n"
            text += "diffstream_store_failed_compactions_total \(store.failedCompactions)\n"
        }
        return text
    }
}
