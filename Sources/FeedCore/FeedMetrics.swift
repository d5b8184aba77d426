import CoreMetrics
import FeedStorage
import Synchronization

/// What knows which feeds are a family's members (hosting): the metrics count them under their family.
package protocol FeedFamilies: AnyObject, Sendable {
    /// The prefix of the family `name` is a member of, or nil for a feed of its own.
    func familyPrefix(of name: String) -> String?
}

/// Feed counters for `/metrics`: subscribers per feed, batches, resyncs (published when `/metrics` is
/// rendered), and the diff time (a swift-metrics histogram).
///
/// Bounded by the feeds that exist, not by every name ever seen (issue 52): a feed's series go when it
/// is deleted or dropped (``removeFeed(_:)``), and a family's members (``familyOf``) are never a series
/// of their own: their batches count in `diffstream_family_batches_total{family}`, their subscribers in
/// `diffstream_family_subscribers{family}`.
public final class FeedMetrics: Sendable {
    private struct State {
        /// Per feed, live ones only (a dropped member leaves with its feed).
        var subscribers: [String: Int] = [:]
        /// Per feed that is not a family's member.
        var batches: [String: Int] = [:]
        /// Per family, for all its members ever (a counter: it never goes down when one is dropped).
        var familyBatches: [String: Int] = [:]
        var resyncs = 0
    }

    private let state = Mutex(State())
    /// Who knows the families (hosting), held weakly: it holds the registry that holds these metrics.
    private struct FamiliesReference { weak var families: (any FeedFamilies)? }
    private let familiesSlot = Mutex(FamiliesReference())
    private let storeSlot = Mutex<(any FeedStore)?>(nil)
    private let keptFiles = Mutex<[@Sendable () -> Int]>([])

    public init() {}

    /// The store whose counters `/metrics` shows (set by the registry).
    package var store: (any FeedStore)? {
        get { storeSlot.withLock { $0 } }
        set { storeSlot.withLock { $0 = newValue } }
    }

    /// Adds `size`, the bytes of files kept beside the store's (a family's members:
    /// ``MemberStore/sizeOnDisk()``), to `diffstream_store_size_bytes`.
    package func countFiles(_ size: @escaping @Sendable () -> Int) {
        keptFiles.withLock { $0.append(size) }
    }

    /// Counts the members of `families`' families under their family's label, never one series each
    /// (called by hosting when it hosts a family).
    package func countMembers(of families: any FeedFamilies) {
        familiesSlot.withLock { $0.families = families }
    }

    /// The family `feed` is a member of (its prefix), or nil for a feed of its own (or when no family
    /// is hosted).
    package func familyPrefix(of feed: String) -> String? {
        familiesSlot.withLock { $0.families }?.familyPrefix(of: feed)
    }

    package func setSubscribers(_ feed: String, _ count: Int) { state.withLock { $0.subscribers[feed] = count } }
    package func recordBatch(_ feed: String) {
        if let family = familyPrefix(of: feed) {
            state.withLock { $0.familyBatches[family, default: 0] += 1 }
        } else {
            state.withLock { $0.batches[feed, default: 0] += 1 }
        }
    }
    package func recordResync() { state.withLock { $0.resyncs += 1 } }
    /// The feed was deleted or dropped: its series go (a member's batches stay in its family's count).
    package func removeFeed(_ feed: String) {
        state.withLock {
            $0.subscribers[feed] = nil
            $0.batches[feed] = nil
        }
    }
    package func recordDiff(seconds: Double) {
        MetricHandles.shared.timer(MetricName.diff).recordSeconds(seconds)
    }

    /// The feed and store values `/metrics` publishes (the diff and commit histograms are recorded as
    /// they happen).
    package func samples() -> [MetricSample] {
        let copy = state.withLock { $0 }
        let families = familiesSlot.withLock { $0.families }
        var subscribers: [String: Int] = [:], familySubscribers: [String: Int] = [:]
        for (feed, count) in copy.subscribers {
            if let family = families?.familyPrefix(of: feed) { familySubscribers[family, default: 0] += count } else { subscribers[feed] = count }
        }
        var samples = subscribers.map { MetricSample(name: "diffstream_feed_subscribers", labels: [("feed", $0.key)], value: Double($0.value), kind: .gauge) }
        samples += familySubscribers.map { MetricSample(name: "diffstream_family_subscribers", labels: [("family", $0.key)], value: Double($0.value), kind: .gauge) }
        samples += copy.batches.map { MetricSample(name: "diffstream_feed_batches_total", labels: [("feed", $0.key)], value: Double($0.value), kind: .counter) }
        samples += copy.familyBatches.map { MetricSample(name: "diffstream_family_batches_total", labels: [("family", $0.key)], value: Double($0.value), kind: .counter) }
        samples.append(MetricSample(name: "diffstream_resyncs_total", value: Double(copy.resyncs), kind: .counter))
        if let store = store?.metrics() {
            let kept = keptFiles.withLock { $0 }.reduce(0) { $0 + $1() }
            samples += [
                MetricSample(name: "diffstream_store_commits_total", value: Double(store.commits), kind: .counter),
                MetricSample(name: "diffstream_store_writes_total", value: Double(store.writes), kind: .counter),
                MetricSample(name: "diffstream_store_writes_per_commit", value: store.commits > 0 ? Double(store.writes) / Double(store.commits) : 0, kind: .gauge),
                MetricSample(name: "diffstream_store_writes_per_commit_max", value: Double(store.maxWritesPerCommit), kind: .gauge),
                MetricSample(name: "diffstream_store_failed_commits_total", value: Double(store.failedCommits), kind: .counter),
                MetricSample(name: "diffstream_store_size_bytes", value: Double(store.sizeBytes + kept), kind: .gauge),
                MetricSample(name: "diffstream_store_compactions_total", value: Double(store.compactions), kind: .counter),
                MetricSample(name: "diffstream_store_failed_compactions_total", value: Double(store.failedCompactions), kind: .counter),
            ]
        }
        return samples
    }
}
