import DiffStream
import DiffStreamJSON
import FeedCore
import FeedStorage
import Synchronization
import Testing

/// A feed's writers that outrun it (issue 39): past ``Feed/maxQueuedWrites`` waiting writes, one more
/// is refused at once with `busy`, nothing written; the queued ones all land, in order.
struct FeedWriteQueueTests {
    /// A log whose commits wait until the test opens the gate.
    final class GatedLog: FeedLog {
        let opened = Mutex(false)
        let waiters = Mutex<[CheckedContinuation<Void, Never>]>([])

        func commit(_ commit: FeedCommit) async -> FeedCommitOutcome {
            await withCheckedContinuation { continuation in
                let now = opened.withLock { $0 }
                if now { continuation.resume() } else { waiters.withLock { $0.append(continuation) } }
            }
            return .committed(version: commit.version, answer: [], first: true)
        }

        func open() {
            opened.withLock { $0 = true }
            for waiter in waiters.withLock({ list in defer { list = [] }; return list }) { waiter.resume() }
        }
    }

    /// A list of items `0...n` (each `n` another snapshot).
    static func snapshot(_ n: Int) -> WireSnapshot {
        let list = (0...n).map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",")
        return (try? WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"a","model":null,"items":[\#(list)]}]}"#.utf8))) ?? WireSnapshot()
    }

    @Test func pastTheBoundAWriteIsRefusedAndTheQueuedOnesLand() async throws {
        let log = GatedLog()
        let feed = Feed(name: "busy", replayLimit: 8, transport: nil, metrics: FeedMetrics(), store: nil, log: log)
        let writes = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0...Feed.maxQueuedWrites {  // one holds the turn, maxQueuedWrites wait
                    group.addTask { try await feed.write(Self.snapshot(n), viewState: nil, options: FeedWriteOptions()).version }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        while await feed.queuedWrites < Feed.maxQueuedWrites { await Task.yield() }
        await #expect(throws: FeedWriteError.busy(limit: Feed.maxQueuedWrites)) {
            try await feed.write(Self.snapshot(9_999), viewState: nil, options: FeedWriteOptions())
        }
        log.open()
        #expect(try await writes.value.sorted() == Array(1...(Feed.maxQueuedWrites + 1)), "every queued write landed, versions contiguous")
        #expect(await feed.version == Feed.maxQueuedWrites + 1)
    }
}
