import FeedStore
import RedisClient
import Synchronization

/// The ``FeedStore`` seam on Redis, for **one** instance: the first step of issue 26, before the seam
/// grows (docs/decisions/0003-redis.md). Every write goes through the commit script with the version
/// check (the base is the write's version − 1), so a second instance writing the same feed is refused
/// (an error, answered 503) rather than overwritten; what a shared deployment needs beyond that (a
/// conflict recomputed, batches from other instances, gaps) is the next step.
///
/// `open` connects (every call with its timeout), makes the epoch if there is none (`SET NX`) and
/// remembers it; a commit that finds another epoch (Redis lost its data) is refused.
public final class RedisStore: FeedStore {
    public let url: RedisURL
    public let keys: RedisKeys
    /// The epoch read at `open`.
    public let epoch: String
    /// `--replay`: the history stream's cap.
    public let replay: Int
    private let client: RedisClient
    private let committer: RedisFeedCommitter
    private let counters = Mutex(StoreMetrics())

    private init(url: RedisURL, keys: RedisKeys, epoch: String, replay: Int, timeout: Double) {
        self.url = url
        self.keys = keys
        self.epoch = epoch
        self.replay = replay
        self.client = RedisClient(url: url, timeout: timeout, name: "redis-store")
        self.committer = RedisFeedCommitter(client: client, keys: keys)
    }

    /// Connects, and makes or reads the epoch.
    public static func open(url: RedisURL, keys: RedisKeys, replay: Int, timeout: Double = 2) throws(RedisError) -> RedisStore {
        let connection = try RedisConnection(url: url, timeout: timeout)
        defer { connection.close() }
        let replies = try connection.pipeline([["SET", keys.epoch, RedisFeedCommitter.nonce(), "NX"], ["GET", keys.epoch]].map { $0.map { Array($0.utf8) } })
        guard let epoch = replies[1].string else { throw .unexpectedReply(command: "GET \(keys.epoch)", reply: replies[1].description) }
        return RedisStore(url: url, keys: keys, epoch: epoch, replay: replay, timeout: timeout)
    }

    /// Stops the client's thread; later commits fail.
    public func close() { client.stop() }

    /// Every feed under the prefix (`SCAN`), each read in one `MULTI`/`EXEC`.
    public func load() throws(StoreError) -> StoreContents {
        do throws(RedisError) {
            let connection = try RedisConnection(url: url, timeout: client.timeout)
            defer { connection.close() }
            let pattern = keys.feed("*")
            var names: [String] = [], cursor = "0"
            repeat {
                let reply = try connection.command(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"])
                guard let parts = reply.array, parts.count == 2, let next = parts[0].string, let found = parts[1].array else {
                    throw .unexpectedReply(command: "SCAN", reply: reply.description)
                }
                cursor = next
                names += found.compactMap { $0.string.map { String($0.dropFirst(keys.feed("").count)) } }
            } while cursor != "0"
            var feeds: [StoredFeed] = []
            for name in Set(names).sorted() {
                guard let feed = try RedisFeedReader.read(name, keys: keys, on: connection) else { continue }
                feeds.append(StoredFeed(name: name, history: feed.history, version: feed.version, snapshot: feed.snapshot,
                                        batches: feed.batches.map { StoredBatch(version: $0.version, bytes: $0.event) }, viewState: feed.viewState))
            }
            return StoreContents(feeds: feeds, notes: ["Redis at \(url): \(feeds.count) feeds under '\(keys.base)', epoch \(epoch)"])
        } catch {
            throw .io(path: url.description, reason: error.description)
        }
    }

    public func commit(_ write: FeedWrite) async throws(StoreError) {
        let started = ContinuousClock.now
        let result: Result<RedisCommitOutcome, RedisError>
        do throws(RedisError) {
            let outcome: RedisCommitOutcome
            switch write {
            case .put(let name, let history, let version, let snapshot, let batch, _, let viewState):
                outcome = try await committer.commit(RedisFeedWrite(feed: name, epoch: epoch, baseVersion: version - 1, history: history, snapshot: snapshot,
                                                                    viewState: viewState, batch: batch?.bytes ?? [], window: replay, writeID: RedisFeedCommitter.nonce()))
            case .viewState(let name, let bytes):
                let version = try await client.command("HGET", keys.feed(name), "version").integer ?? 0
                outcome = try await committer.setViewState(feed: name, epoch: epoch, version: version, state: bytes, writeID: RedisFeedCommitter.nonce())
            case .delete(let name):
                outcome = try await committer.delete(feed: name, epoch: epoch, writeID: RedisFeedCommitter.nonce())
            }
            result = .success(outcome)
        } catch {
            result = .failure(error)
        }
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let refusal: String? = switch result {
        case .success(.committed): nil
        case .success(.conflict(let version, let history)): "another writer changed the feed (Redis holds version \(version) of history \(history)); it is shared only once issue 26 is done"
        case .success(.epochChanged(let current)): "Redis lost its data (epoch \(epoch) is now \(current ?? "missing")); restart to start new histories"
        case .success(.fenced(let holder)): "the feed's lease is held by \(holder ?? "no one")"
        case .success(.notCommitted): "the write's answer was lost and it was not committed"
        case .failure(let error): error.description
        }
        counters.withLock {
            $0.commits += 1
            $0.writes += 1
            $0.commitSeconds += seconds
            $0.maxWritesPerCommit = 1
            if refusal != nil { $0.failedCommits += 1 }
        }
        if let refusal { throw .io(path: url.description, reason: refusal) }
    }

    public func metrics() -> StoreMetrics { counters.withLock { $0 } }
}
