import CoreMetrics
import Dispatch
import CThreads
import Foundation
import Timekeeping
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Group commit, for ``LogFeedStore``: writers queue their write and wait; one thread takes everything
/// queued, hands it to the store's `commit` function in one call (one fsync for all of them), counts
/// it, then answers each writer.
final class GroupCommitter: @unchecked Sendable {
    // `@unchecked Sendable`: every stored property but `path` and `stopped` is guarded by `condition`;
    // `commitGroup` is set once by `start` before the thread starts and used only by that thread;
    // `commitTimer` is used only by that thread.
    // Unsafe, not checked, continuations (a checked one allocates a canary per write): each is resumed
    // exactly once, by `submit` when the store is not open (then never queued), else by `run`, which
    // answers every write it takes from the queue and stops only once the queue is empty.
    typealias Reply = UnsafeContinuation<Result<Void, StoreError>, Never>

    /// Named in the error a write gets when the store is not open.
    let path: String
    private let condition = NSCondition()
    private var queue: [(write: FeedWrite, reply: Reply)] = []
    private var counters = StoreMetrics()
    private var lastGroupSize = 0
    private var lastCommitSeconds = 0.0
    private(set) var isRunning = false
    private var stopping = false
    private var closed = false
    private let stopped = DispatchSemaphore(value: 0)
    private var commitGroup: (([FeedWrite]) -> [Result<Void, StoreError>])?
    /// Used only by the committing thread.
    private var commitTimer: CoreMetrics.Timer?

    init(path: String) {
        self.path = path
    }

    /// Starts the thread. `commit` gets each group and returns one result per write, in order.
    func start(threadName: String, commit: @escaping ([FeedWrite]) -> [Result<Void, StoreError>]) {
        condition.lock()
        commitGroup = commit
        isRunning = true
        condition.unlock()
        // Named from inside, first thing (CThreads's diffstream_name_this_thread says why).
        let thread = Thread { [self] in
            diffstream_name_this_thread(threadName)
            run()
        }
        thread.start()
    }

    /// Queues a write and waits for its commit.
    func submit(_ write: FeedWrite) async throws(StoreError) {
        let result = await withUnsafeContinuation { (reply: Reply) in
            condition.lock()
            guard isRunning && !closed else {
                condition.unlock()
                reply.resume(returning: .failure(.io(path: path, reason: "the store is not open")))
                return
            }
            queue.append((write, reply))
            condition.signal()
            condition.unlock()
        }
        try result.get()
    }

    /// Finishes the writes already queued and stops the thread; later writes fail. Idempotent.
    func stop() {
        condition.lock()
        guard !closed else { condition.unlock(); return }
        closed = true
        stopping = true
        let running = isRunning
        condition.signal()
        condition.unlock()
        if running { stopped.wait() }
    }

    func metrics() -> StoreMetrics {
        condition.lock()
        defer { condition.unlock() }
        return counters
    }

    /// Changes the counters the committer does not keep itself (size on disk, compactions).
    func updateMetrics(_ change: (inout StoreMetrics) -> Void) {
        condition.lock()
        change(&counters)
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty {
                condition.unlock()
                stopped.signal()
                return
            }
            gather()
            let group = queue
            queue.removeAll(keepingCapacity: true)
            let commit = commitGroup
            condition.unlock()
            let started = Self.clock()
            let results = commit?(group.map(\.write)) ?? group.map { _ in .failure(.io(path: path, reason: "the store is not open")) }
            let seconds = Self.clock() - started
            // Made on the first commit (after the metrics system is bootstrapped), then kept: making one
            // looks it up in the backend's registry.
            if commitTimer == nil { commitTimer = CoreMetrics.Timer(label: StoreMetrics.commitDurationLabel) }
            commitTimer?.recordSeconds(seconds)
            condition.lock()
            counters.commits += 1
            counters.writes += group.count
            counters.commitSeconds += seconds
            counters.maxWritesPerCommit = max(counters.maxWritesPerCommit, group.count)
            lastGroupSize = group.count
            lastCommitSeconds = seconds
            if results.contains(where: { if case .failure = $0 { true } else { false } }) { counters.failedCommits += 1 }
            condition.unlock()
            for (entry, result) in zip(group, results) { entry.reply.resume(returning: result) }
        }
    }

    /// The gathering half (called with `condition` held): when the last commit served several
    /// writers, they are about to come back; while writes keep arriving less than `gatherGap` apart,
    /// wait for them, so they share this commit instead of splitting into alternating half-groups.
    /// The wait is bounded by a quarter of what the last commit took (at most `gatherLimit`): worth it
    /// where an fsync is slow (a 4 ms fsync: a 1 ms wait that merges two groups halves the fsyncs),
    /// not where it is fast (measured on a disk with 0.15 ms fsyncs: waiting up to 1 ms cost 15% of
    /// the throughput at 16 writers). A lone writer never waits.
    private func gather() {
        guard lastGroupSize > 1 else { return }
        let wait = min(Self.gatherLimit, lastCommitSeconds / 4)
        guard wait >= Self.gatherGap else { return }
        // The deadline is on the monotonic clock; `NSCondition` takes its timeout as a `Date`, made from
        // the seconds left just before each wait.
        let limit = Self.clock() + wait
        while !stopping && queue.count < lastGroupSize * 2 {
            let before = queue.count
            let gap = min(limit - Self.clock(), Self.gatherGap)
            _ = condition.wait(until: Date(timeIntervalSinceNow: gap))
            if queue.count == before || Self.clock() >= limit { break }
        }
    }

    /// The longest pause between two arriving writes that still waits for the next one, and the
    /// longest a commit waits in all.
    static let gatherGap = 0.000_2
    static let gatherLimit = 0.001

    static func clock() -> Double {
        MonotonicClock.now()
    }
}
