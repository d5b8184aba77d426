import DiffStream
import DiffStreamJSON
import HTTPServer
#if canImport(Glibc)
import Glibc
#endif

/// A named, versioned stream of snapshots: the current snapshot, its version, a window of recent
/// batches for resuming clients, and the subscribers.
///
/// The actor owns all of that. A change is diffed once and encoded once; the same ``EventPayload`` is
/// queued to every subscriber by one broadcast. Because subscribing and publishing both run on the
/// actor, a new subscriber's first event and the batches after it are never out of order.
public actor Feed {
    public nonisolated let name: String
    /// Random per feed instance: event ids from any other history are recognised as foreign.
    public nonisolated let history: String
    public private(set) var snapshot: WireSnapshot
    public private(set) var version: Int
    private let replayLimit: Int
    private var replay: [(version: Int, payload: EventPayload)] = []
    private var subscribers: [Int: EventStream] = [:]
    private let server: HTTPServer?
    private let metrics: FeedMetrics
    private var deleted = false
    static let retryMilliseconds = 2000

    init(name: String, snapshot: WireSnapshot, replayLimit: Int, server: HTTPServer?, metrics: FeedMetrics) {
        self.name = name
        self.history = EventID.newHistory()
        self.snapshot = snapshot
        self.version = 1
        self.replayLimit = max(0, replayLimit)
        self.server = server
        self.metrics = metrics
    }

    /// The number of open subscriptions.
    public var subscriberCount: Int { subscribers.count }

    /// The snapshot document (`GET /feeds/{feed}`).
    public func document() -> (version: Int, json: [UInt8]) {
        (version, FeedEvents.snapshotJSON(feed: name, version: version, snapshot: snapshot))
    }

    /// Replaces the snapshot; returns the new version and the number of operations. Content equal to
    /// the current one makes no version and no event.
    @discardableResult
    public func publish(_ new: WireSnapshot) -> (version: Int, operations: Int) {
        let started = Self.clock()
        let batch = WireSnapshot.diff(from: snapshot, to: new)
        metrics.recordDiff(seconds: Self.clock() - started)
        guard !batch.isEmpty else { return (version, 0) }
        snapshot = new
        version += 1
        let payload = EventPayload(FeedEvents.batchEvent(feed: name, id: EventID(history: history, version: version), batch: batch))
        if replayLimit > 0 {
            replay.append((version, payload))
            if replay.count > replayLimit + replayLimit / 4 { replay.removeFirst(replay.count - replayLimit) }
        }
        metrics.recordBatch(name)
        server?.broadcast(payload, to: Array(subscribers.values))
        return (version, batch.operations.count)
    }

    /// Adds a subscriber. It first gets a `retry:` field, then either the batches it missed since
    /// `lastEventID` (when that id is ours and still in the replay window) or a fresh snapshot.
    public func subscribe(_ stream: EventStream, lastEventID: String?) {
        guard !deleted else {
            stream.send(EventPayload(FeedEvents.deletedEvent(feed: name)))
            stream.close()
            return
        }
        var initial = ServerSentEvent.retry(milliseconds: Self.retryMilliseconds)
        if let missed = missedBatches(since: lastEventID) {
            for payload in missed { initial += payload.bytes }
        } else {
            initial += FeedEvents.snapshotEvent(feed: name, id: EventID(history: history, version: version), snapshot: snapshot)
        }
        stream.send(EventPayload(initial))
        subscribers[stream.id] = stream
        metrics.setSubscribers(name, subscribers.count)
        let id = stream.id
        stream.onTermination { [weak self] in
            Task { await self?.unsubscribe(id) }
        }
        stream.onResync { [weak self] stream in
            Task { await self?.resync(stream) }
        }
    }

    /// The replayed batches for a resuming client, or nil if it needs a snapshot.
    func missedBatches(since lastEventID: String?) -> [EventPayload]? {
        guard let text = lastEventID, let id = EventID(text), id.history == history, id.version <= version else { return nil }
        if id.version == version { return [] }
        guard let first = replay.first, first.version <= id.version + 1 else { return nil }
        return replay.filter { $0.version > id.version }.map(\.payload)
    }

    /// A subscriber fell behind and has drained its queue: catch it up with a fresh snapshot.
    private func resync(_ stream: EventStream) {
        guard subscribers[stream.id] != nil else { return }
        metrics.recordResync()
        stream.resume(with: EventPayload(FeedEvents.snapshotEvent(feed: name, id: EventID(history: history, version: version), snapshot: snapshot)))
    }

    private func unsubscribe(_ id: Int) {
        subscribers[id] = nil
        metrics.setSubscribers(name, subscribers.count)
    }

    /// Ends every subscription with `event: deleted`.
    func delete() {
        deleted = true
        let payload = EventPayload(FeedEvents.deletedEvent(feed: name))
        let streams = Array(subscribers.values)
        server?.broadcast(payload, to: streams)
        for stream in streams { stream.close() }
        subscribers.removeAll()
        metrics.removeFeed(name)
    }

    static func clock() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
