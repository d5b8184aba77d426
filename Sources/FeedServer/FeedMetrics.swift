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

    public init() {}

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
        return text
    }
}
