import FeedStorage
import Redis
import Synchronization
import Timekeeping

/// The ``SharedFeedStore`` seam on Redis (issue 26, docs/decisions/0003-redis.md): feeds several
/// instances share. Writes go through the scripts with the version check (``RedisFeedCommitter``),
/// reads are one `MULTI`/`EXEC` each (``RedisFeedReader``), and the commits of every instance arrive
/// through pub/sub on a connection of the store's own (``RedisSubscriber``) as ``events``.
///
/// `open` connects (every call with its timeout), makes the epoch if there is none (`SET NX`) and
/// remembers it; a commit or a position check that finds another epoch says Redis lost its data.
/// The plain ``FeedStore`` calls serve one instance: their commit's base is the write's version − 1,
/// and a write refused (another writer, lost data) is a `StoreError`.
public final class RedisStore: SharedFeedStore {
    public let url: RedisURL
    public var location: String { url.description }
    public var kind: String { "Redis" }
    public let keys: RedisKeys
    /// The epoch read at `open`, or adopted after Redis lost its data (``adoptNewEpoch()``).
    public var epoch: String { currentEpoch.withLock { $0 } }
    /// This store's id, drawn at `open`: published with its commits, so that its own come back to no one
    /// (the writer applies its commit from the script's answer; the message would only be dropped later).
    public let instanceID: String
    private let currentEpoch: Mutex<String>
    /// `--max-feeds` and `--max-store-bytes`, counted over every instance's feeds (nil: none).
    public let maxFeeds: Int?
    public let maxBytes: Int?
    /// `--replay`: the history stream's cap.
    public let replay: Int
    public let events: AsyncStream<SharedStoreEvent>
    private let client: RedisClient
    /// The connections commits go out on (a thread each; one by default). Each pipelines: the commits
    /// queued while a turn was in Redis go out together in the next, so they reach Redis in one read
    /// and share its fsync (`appendfsync always` syncs once per event-loop turn). One connection
    /// pipelined measured faster than several (docs/benchmarks.md): fewer thread wake-ups per commit.
    private let committers: [RedisFeedCommitter]
    private let nextCommitter = Atomic<Int>(0)
    /// The next connection for a commit, in turn.
    private var committer: RedisFeedCommitter {
        committers[nextCommitter.add(1, ordering: .relaxed).oldValue % committers.count]
    }
    private let reader: RedisFeedReader
    private let lease: RedisLease
    private let subscriber: RedisSubscriber
    private let eventSink: AsyncStream<SharedStoreEvent>.Continuation
    private let counters = Mutex(StoreMetrics())
    /// The largest write Redis refused as full (`OOM`) since a commit last succeeded: ``writeRefusal()``
    /// says Redis is full while less memory than that is left.
    private let refusedBytes = Mutex(0)
    /// The least memory below `maxmemory` under which ``writeRefusal()`` says Redis is full.
    public static let fullHeadroom = 64 * 1024

    /// Milliseconds an instance counts as running (``agree(on:url:keys:instance:livenessMilliseconds:timeout:)``)
    /// unless its store renews it, which it does every second until ``close()``, agreeing again each
    /// time: should every liveness have lapsed (Redis away longer) and an instance with other settings
    /// have started meanwhile, the renewal finds the difference and reports it.
    public static let livenessMilliseconds = 5_000
    private let liveness: Task<Void, Never>
    /// One renewal of this instance's liveness, which ``liveness`` runs every second.
    package let livenessRenewal: LivenessRenewal

    private init(url: RedisURL, keys: RedisKeys, instanceID: String, settings: [(name: String, value: String)], onSettingsConflict: @escaping @Sendable ([String]) -> Void,
                 epoch: String, replay: Int, maxFeeds: Int?, maxBytes: Int?, timeout: Double, pingInterval: Double, connections: Int) {
        self.url = url
        self.keys = keys
        self.currentEpoch = Mutex(epoch)
        self.instanceID = instanceID
        self.maxFeeds = maxFeeds
        self.maxBytes = maxBytes
        self.replay = replay
        self.client = RedisClient(url: url, timeout: timeout, name: "redis-store")
        self.committers = (0..<max(1, connections)).map { index in
            RedisFeedCommitter(client: RedisClient(url: url, timeout: timeout, name: "redis-commit-\(index)"), keys: keys, origin: instanceID)
        }
        self.reader = RedisFeedReader(client: client, keys: keys)
        let renewal = LivenessRenewal(client: client, command: Self.agreeCommand(settings, keys: keys, instance: instanceID, livenessMilliseconds: Self.livenessMilliseconds),
                                      settings: settings, keys: keys, onSettingsConflict: onSettingsConflict)
        self.livenessRenewal = renewal
        self.liveness = Task {
            while !Task.isCancelled {
                await renewal.renew()
                try? await Task.sleep(for: .seconds(1))
            }
        }
        self.lease = RedisLease(client: client, keys: keys)
        let (events, sink) = AsyncStream.makeStream(of: SharedStoreEvent.self)
        self.events = events
        self.eventSink = sink
        let channelPrefix = keys.channel("")
        self.subscriber = RedisSubscriber(url: url, timeout: timeout, pingInterval: pingInterval, reconnectDelay: 1, name: "redis-pubsub") { event in
            if let translated = Self.translate(event, channelPrefix: channelPrefix, skipping: instanceID) { sink.yield(translated) }
        }
    }

    /// A subscriber's event as the seam says it; nil for what the seam does not carry (a commit
    /// published by the instance `skipping` names).
    static func translate(_ event: RedisSubscriber.Event, channelPrefix: String, skipping origin: String = "") -> SharedStoreEvent? {
        switch event {
        case .subscribed: return .connected
        case .disconnected(let error): return .interrupted(reason: error.description)
        case .confirmed(let channel):
            guard channel.utf8.starts(with: channelPrefix.utf8) else { return nil }
            return .following(feed(of: channel, prefix: channelPrefix))
        case .message(let channel, let payload):
            guard channel.utf8.starts(with: channelPrefix.utf8) else { return nil }
            return message(payload, feed: feed(of: channel, prefix: channelPrefix), skipping: origin)
        }
    }

    /// The feed a channel is of: what follows the prefix (compared and cut as bytes, in place).
    private static func feed(of channel: String, prefix: String) -> String {
        String(Substring(channel.utf8.dropFirst(prefix.utf8.count)))
    }

    /// A published commit as the seam says it; nil for one the instance `origin` names committed (it is
    /// not copied out of the payload, and `name` is not asked for). The scripts publish
    /// `<history> <version> <batch length> <snapshot length> <state length> [<instance>]\n<batch><snapshot><state>`
    /// (a length of -1: not included; a state-only change has no snapshot; ``RedisScripts/newHistory``
    /// names no instance), and `<history> 0\n` after a delete. Nil for anything else.
    static func message(_ payload: [UInt8], feed name: @autoclosure () -> String, skipping origin: String = "") -> SharedStoreEvent? {
        guard let newline = payload.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        // The head's fields as ranges of the payload (runs of spaces separate them); read in place, as
        // every instance reads every commit published, its own included (skipped below).
        var head: [Range<Int>] = []
        head.reserveCapacity(6)
        var start = 0
        for index in 0...newline where index == newline || payload[index] == UInt8(ascii: " ") {
            if index > start {
                guard head.count < 6 else { return nil }
                head.append(start..<index)
            }
            start = index + 1
        }
        func integer(_ field: Range<Int>) -> Int? {
            var index = field.lowerBound, negative = false
            if index < field.upperBound, payload[index] == UInt8(ascii: "-") { negative = true; index += 1 }
            guard index < field.upperBound, field.upperBound - index <= 18 else { return nil }
            var value = 0
            while index < field.upperBound {
                let digit = payload[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
                index += 1
            }
            return negative ? -value : value
        }
        guard head.count >= 2, let version = integer(head[1]) else { return nil }
        if version == 0, head.count == 2 { return .deleted(name: name(), history: String(decoding: payload[head[0]], as: UTF8.self)) }
        guard head.count == 5 || head.count == 6, let batchLength = integer(head[2]), let snapshotLength = integer(head[3]), let stateLength = integer(head[4]),
              batchLength >= 0, snapshotLength >= -1, stateLength >= -1,
              payload.count - newline - 1 == batchLength + max(0, snapshotLength) + max(0, stateLength) else { return nil }
        if head.count == 6, !origin.isEmpty, head[5].count == origin.utf8.count,
           origin.utf8.withContiguousStorageIfAvailable({ payload[head[5]].elementsEqual($0) }) ?? payload[head[5]].elementsEqual(origin.utf8) {
            return nil  // this instance's own commit
        }
        var at = newline + 1
        func take(_ length: Int) -> [UInt8]? {
            guard length >= 0 else { return nil }
            defer { at += length }
            return Array(payload[at..<(at + length)])
        }
        let batch = take(batchLength) ?? []
        let snapshot = take(snapshotLength)
        let state = take(stateLength)
        return .committed(name: name(), history: String(decoding: payload[head[0]], as: UTF8.self), version: version, batch: batch, snapshot: snapshot, state: state)
    }

    /// Connects, and makes or reads the epoch.
    /// - Parameter pingInterval: seconds of pub/sub silence after which its connection is checked.
    /// - Parameter maxFeeds: `--max-feeds`, counted over every instance's feeds (nil: no limit).
    /// - Parameter maxBytes: `--max-store-bytes`, the same (nil: no limit).
    /// - Parameter connections: connections commits go out on (each with a thread, each pipelined).
    /// - Parameter instanceID: this instance's id (the one ``agree(on:url:keys:instance:livenessMilliseconds:timeout:)`` was given).
    /// - Parameter settings: the settings it agreed on, agreed on again with each renewal of its liveness;
    ///   `onSettingsConflict` hears of a difference found then (the differing settings, as `agree` names them).
    public static func open(url: RedisURL, keys: RedisKeys, instanceID: String = RandomID.token(), settings: [(name: String, value: String)] = [],
                            onSettingsConflict: @escaping @Sendable ([String]) -> Void = { _ in }, replay: Int, maxFeeds: Int? = nil, maxBytes: Int? = nil,
                            timeout: Double = 2, pingInterval: Double = 1, connections: Int = 1) throws(RedisError) -> RedisStore {
        let connection = try RedisConnection(url: url, timeout: timeout)
        defer { connection.close() }
        let replies = try connection.pipeline([["SET", keys.epoch, RandomID.token(), "NX"], ["GET", keys.epoch]].map { $0.map { Array($0.utf8) } })
        guard let epoch = replies[1].string else { throw .unexpectedReply(command: "GET \(keys.epoch)", reply: replies[1].description) }
        return RedisStore(url: url, keys: keys, instanceID: instanceID, settings: settings, onSettingsConflict: onSettingsConflict, epoch: epoch, replay: replay, maxFeeds: maxFeeds, maxBytes: maxBytes, timeout: timeout, pingInterval: pingInterval, connections: connections)
    }

    /// The settings every instance must agree on (`--replay`, the limits), compared with the running
    /// instances' (``RedisScripts/agree``): while any other instance is present they must be equal;
    /// with none, this instance's become the shared ones. Agreeing, `instance` is present for
    /// `livenessMilliseconds` (the store it opens renews it).
    /// - Returns: one line per setting whose value differs: the name, this instance's value and the stored one.
    public static func agree(on settings: [(name: String, value: String)], url: RedisURL, keys: RedisKeys, instance: String,
                             livenessMilliseconds: Int = RedisStore.livenessMilliseconds, timeout: Double = 2) throws(RedisError) -> [String] {
        let connection = try RedisConnection(url: url, timeout: timeout)
        defer { connection.close() }
        let reply = try connection.command(agreeCommand(settings, keys: keys, instance: instance, livenessMilliseconds: livenessMilliseconds))
        return try differences(reply, settings: settings, keys: keys)
    }

    private static func agreeCommand(_ settings: [(name: String, value: String)], keys: RedisKeys, instance: String, livenessMilliseconds: Int) -> [[UInt8]] {
        (["EVAL", RedisScripts.agree, "2", keys.settings, keys.instances, instance, String(livenessMilliseconds)] + settings.flatMap { [$0.name, $0.value] })
            .map { Array($0.utf8) }
    }

    /// ``RedisScripts/agree``'s answer as one line per differing setting.
    static func differences(_ reply: RedisReply, settings: [(name: String, value: String)], keys: RedisKeys) throws(RedisError) -> [String] {
        if case .error(let message) = reply { throw .server(command: "EVAL (agree)", message: message) }
        guard let pairs = reply.array?.compactMap(\.string), pairs.count % 2 == 0 else { throw .unexpectedReply(command: "EVAL (agree)", reply: reply.description) }
        let stored = Dictionary(stride(from: 0, to: pairs.count, by: 2).map { (pairs[$0], pairs[$0 + 1]) }) { first, _ in first }
        return settings.compactMap { setting in
            stored[setting.name].map { "\(setting.name): this instance has \(setting.value), the instances sharing '\(keys.base)' have \($0)" }
        }
    }

    /// Leaves the running instances (so that a start with other settings need not wait for this
    /// one's liveness to end), stops the client's and the subscriber's threads and ends ``events``;
    /// later calls fail.
    public func close() {
        liveness.cancel()
        subscriber.stop()
        eventSink.finish()
        client.stop()  // finishes a renewal already queued, so the removal below comes after it
        for committer in committers { committer.client.stop() }
        if let connection = try? RedisConnection(url: url, timeout: client.timeout) {
            _ = try? connection.command(["ZREM", keys.instances, instanceID])
            connection.close()
        }
    }

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
            throw storeError(error)
        }
    }

    /// One instance's commit: the base is the write's version − 1 (for a view state, the stored
    /// version); anything but a commit is an error naming the URL.
    public func commit(_ write: FeedWrite) async throws(StoreError) {
        let base: Int
        switch write {
        case .put(_, _, let version, _, _, _, _): base = version - 1
        case .viewState(let name, _):
            do throws(RedisError) {
                base = try await client.command("HGET", keys.feed(name), "version").integer ?? 0
            } catch {
                throw storeError(error)
            }
        case .delete: base = 0
        }
        let refusal: String? = switch await commit(FeedCommit(write, base: base, writeID: RandomID.perWrite(), clientKey: true)) {
        case .committed: nil
        case .unavailable(let error): throw error
        case .conflict(let version, let history): "another writer changed the feed (Redis holds version \(version) of history \(history))"
        case .lostData: "Redis lost its data (epoch \(epoch) is gone); restart to start new histories"
        case .fenced: "the feed's lease is held by another instance"
        case .notCommitted: "the write's answer was lost and it was not committed"
        case .overLimit(let feeds, let used, let most): feeds ? "\(used) feeds of at most \(most)" : "\(used) bytes stored of at most \(most)"
        }
        if let refusal { throw .io(path: url.description, reason: refusal) }
    }

    /// ``FeedLog/commit(_:)``: the commit script (or the view-state or delete script), its answer (or
    /// error) translated into ``FeedCommitOutcome`` here, once; a lost answer is settled by
    /// ``RedisFeedCommitter`` first.
    public func commit(_ commit: FeedCommit) async -> FeedCommitOutcome {
        let epoch = self.epoch, committer = self.committer
        let started = MonotonicClock.now()
        let result: Result<RedisCommitOutcome, RedisError>
        do throws(RedisError) {
            let outcome: RedisCommitOutcome
            switch commit.write {
            case .put(let name, let history, _, let snapshot, let batch, _, let viewState):
                outcome = try await committer.commit(RedisFeedWrite(feed: name, epoch: epoch, baseVersion: commit.base, history: history, snapshot: snapshot, viewState: viewState,
                                                                    batch: batch?.bytes ?? [], window: replay, writeID: commit.writeID, fence: commit.fence, answer: commit.answer,
                                                                    expectedState: commit.expectedState, maxFeeds: maxFeeds, counted: commit.counted, maxBytes: maxBytes,
                                                                    clientKey: commit.clientKey))
            case .viewState(let name, let bytes):
                outcome = try await committer.setViewState(feed: name, epoch: epoch, version: commit.base, history: commit.baseHistory, state: bytes, writeID: commit.writeID,
                                                           clientKey: commit.clientKey, expectedState: commit.expectedState, fence: commit.fence, answer: commit.answer)
            case .delete(let name):
                outcome = try await committer.delete(feed: name, epoch: epoch, writeID: commit.writeID, clientKey: commit.clientKey, answer: commit.answer)
            }
            result = .success(outcome)
        } catch {
            result = .failure(error)
        }
        let seconds = MonotonicClock.now() - started
        let outcome: FeedCommitOutcome = switch result {
        case .success(.committed(let version, let answer, let first)): .committed(version: version, answer: answer, first: first)
        case .success(.conflict(let version, let history)): .conflict(version: version, history: history)
        case .success(.epochChanged): .lostData
        case .success(.fenced): .fenced
        case .success(.notCommitted): .notCommitted
        case .success(.limit(let kind, let used, let most)): .overLimit(feeds: kind == "feeds", used: used, most: most)
        case .failure(let error): .unavailable(storeError(error))
        }
        switch result {
        case .success(.committed): refusedBytes.withLock { $0 = 0 }
        case .failure(let error) where error.outOfMemory:
            let bytes: Int = switch commit.write {
            case .put(_, _, _, let snapshot, let batch, _, let viewState): snapshot.count + (batch?.bytes.count ?? 0) + (viewState?.count ?? 0)
            case .viewState(_, let state): state.count
            case .delete: 0
            }
            refusedBytes.withLock { $0 = max($0, bytes + commit.answer.count) }
        default: break
        }
        counters.withLock {
            $0.commits += 1
            $0.writes += 1
            $0.commitSeconds += seconds
            $0.maxWritesPerCommit = 1
            if case .committed = outcome {} else { $0.failedCommits += 1 }
        }
        return outcome
    }

    public func read(_ name: String) async throws(StoreError) -> StoredFeed? {
        do throws(RedisError) {
            guard let feed = try await reader.read(name) else { return nil }
            return StoredFeed(name: name, history: feed.history, version: feed.version, snapshot: feed.snapshot,
                              batches: feed.batches.map { StoredBatch(version: $0.version, bytes: $0.event) }, viewState: feed.viewState)
        } catch {
            throw storeError(error)
        }
    }

    public func batches(_ name: String, history: String, after version: Int) async throws(StoreError) -> [StoredBatch]? {
        do throws(RedisError) {
            return try await reader.batches(name, history: history, after: version)?.map { StoredBatch(version: $0.version, bytes: $0.event) }
        } catch {
            throw storeError(error)
        }
    }

    /// The epoch and each feed's `HMGET history version`, in one pipeline.
    public func positions(_ names: [String]) async throws(StoreError) -> StorePositions {
        let commands = [["GET", keys.epoch]] + names.map { ["HMGET", keys.feed($0), "history", "version"] }
        do throws(RedisError) {
            let replies = try await client.run { connection throws(RedisError) in try connection.pipeline(commands.map { $0.map { Array($0.utf8) } }) }
            // An error is not a lost epoch: `-LOADING` while Redis replays its AOF, `-BUSY` during a script.
            if case .error(let message) = replies.first { throw .server(command: "GET", message: message) }
            var feeds: [String: FeedPosition] = [:]
            for (name, reply) in zip(names, replies.dropFirst()) {
                guard let fields = reply.array, fields.count == 2 else { throw .unexpectedReply(command: "HMGET", reply: reply.description) }
                if let history = fields[0].string, let version = fields[1].integer { feeds[name] = FeedPosition(history: history, version: version) }
            }
            return StorePositions(intact: replies.first?.string == self.epoch, feeds: feeds)
        } catch {
            throw storeError(error)
        }
    }

    /// `HGET writes:<name> <id>`, and `GET` of the key an earlier build kept it under (a rolling upgrade).
    public func committedAnswer(_ name: String, writeID: String) async throws(StoreError) -> (version: Int, answer: [UInt8])? {
        let commands = [[Array("HGET".utf8), Array(keys.writes(name).utf8), Array(writeID.utf8)], [Array("GET".utf8), Array(keys.write(name, id: writeID).utf8)]]
        do throws(RedisError) {
            let replies = try await client.run { connection throws(RedisError) in try connection.pipeline(commands) }
            for reply in replies { if case .error(let message) = reply { throw .server(command: "HGET", message: message) } }
            return (replies[0].bytes ?? replies[1].bytes).flatMap(RedisFeedCommitter.parseDone)
        } catch {
            throw storeError(error)
        }
    }

    /// ``RedisScripts/recordAnswer``: `done <version> <answer>` kept under a client's `writeID` among
    /// the feed's keyed ids, unless an answer is kept for it already (returned).
    public func recordAnswer(_ name: String, writeID: String, version: Int, answer: [UInt8]) async throws(StoreError) -> (version: Int, answer: [UInt8])? {
        let committer = committers[0]
        let command: [[UInt8]] = [Array("EVAL".utf8), Array(RedisScripts.recordAnswer.utf8), Array("4".utf8),
                                  Array(keys.write(name, id: writeID).utf8), Array(keys.writes(name).utf8),
                                  Array(keys.writeOrder(name, keyed: true).utf8), Array(keys.writeOrder(name, keyed: false).utf8),
                                  Array(writeID.utf8), Array("done \(version) ".utf8) + answer, Array(String(committer.writeTTL).utf8),
                                  Array(String(committer.keyedCap).utf8), Array(String(committer.writeTTL).utf8)]
        do throws(RedisError) {
            let reply = try await client.command(command)
            if case .error(let message) = reply { throw .server(command: "EVAL (record answer)", message: message) }
            return reply.bytes.flatMap(RedisFeedCommitter.parseDone)  // nil: this answer is the one kept
        } catch {
            throw storeError(error)
        }
    }

    public func usage() async throws(StoreError) -> (feeds: Int, bytes: Int) {
        do throws(RedisError) {
            let reply = try await client.command("HMGET", keys.usage, "feeds", "bytes")
            let fields = reply.array ?? []
            return (fields.first?.integer ?? 0, fields.dropFirst().first?.integer ?? 0)
        } catch {
            throw storeError(error)
        }
    }

    public func restartHistory(_ name: String, from history: String, at version: Int, to fresh: String) async throws(StoreError) -> Bool {
        do throws(RedisError) {
            if case .committed = try await committer.newHistory(feed: name, epoch: epoch, from: history, at: version, to: fresh) { return true }
            return false
        } catch {
            throw storeError(error)
        }
    }

    /// `SCAN` of the feed keys.
    public func names() async throws(StoreError) -> [String] {
        do throws(RedisError) {
            return try await Self.feedNames(client, keys: keys)
        } catch {
            throw storeError(error)
        }
    }

    /// The names of the feeds under `keys`, by `SCAN`, sorted.
    /// - Complexity: O(k) for k keys in Redis (`SCAN` visits them all, 1,000 a call).
    static func feedNames(_ client: RedisClient, keys: RedisKeys) async throws(RedisError) -> [String] {
        let pattern = keys.feed("*"), prefix = keys.feed("").count
        return try await client.run { connection throws(RedisError) in
            var names = Set<String>(), cursor = "0"
            repeat {
                let reply = try connection.command(["SCAN", cursor, "MATCH", pattern, "COUNT", "1000"])
                guard let parts = reply.array, parts.count == 2, let next = parts[0].string, let found = parts[1].array else {
                    throw .unexpectedReply(command: "SCAN", reply: reply.description)
                }
                cursor = next
                for key in found { if let key = key.string { names.insert(String(key.dropFirst(prefix))) } }
            } while cursor != "0"
            return names.sorted()
        }
    }

    public func follow(_ name: String) { subscriber.subscribe(keys.channel(name)) }

    public func unfollow(_ name: String) { subscriber.unsubscribe(keys.channel(name)) }

    public func metrics() -> StoreMetrics { counters.withLock { $0 } }

    /// A Redis error as the seam says it: the connection's failures are `unreachable` (503 "redis
    /// unavailable"), the server's refusals `io`; both name the URL (its password hidden).
    /// A Redis that cannot be reached, or answers that it cannot serve now (``RedisError/temporarilyRefused``:
    /// replaying its AOF, a failover), is unreachable for the API (`503 redis unavailable`); any other
    /// error answer is a storage error.
    /// Redis's `OOM` answer (its memory reached `maxmemory` under `noeviction`) is `outOfMemory` (507).
    func storeError(_ error: RedisError) -> StoreError {
        if error.outOfMemory { return .outOfMemory(url: url.description, reason: Self.fullReason(error.description)) }
        return error.breaksConnection || error.temporarilyRefused
            ? .unreachable(url: url.description, reason: error.description) : .io(path: url.description, reason: error.description)
    }

    /// Why a full Redis refuses writes, with what it said (`said`).
    static func fullReason(_ said: String) -> String {
        "its used memory passed its maxmemory, and with maxmemory-policy noeviction it refuses writes until memory is freed (\(said))"
    }

    /// Whether Redis has room for a write: `SETRANGE <epoch> 0 ""` (which changes nothing, but which a
    /// full Redis refuses with `OOM` as it refuses the commit scripts) and `INFO memory`, in one
    /// pipeline. Redis counts a command's own bytes while it judges it, so a small probe can pass while
    /// writes are refused: Redis is also full while less than ``fullHeadroom`` (or the largest write it
    /// refused since a commit last succeeded) is left below `maxmemory`. Nil when there is room, or when
    /// Redis cannot be asked (``positions(_:)`` says that).
    public func writeRefusal() async -> String? {
        let commands: [[[UInt8]]] = [[Array("SETRANGE".utf8), Array(keys.epoch.utf8), Array("0".utf8), []], [Array("INFO".utf8), Array("memory".utf8)]]
        guard let replies = try? await client.run({ connection throws(RedisError) in try connection.pipeline(commands) }), replies.count == 2 else { return nil }
        var fields: [Substring: Int] = [:]
        for line in (replies[1].string ?? "").split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1]) { fields[parts[0]] = value }
        }
        let used = fields["used_memory"] ?? 0, most = fields["maxmemory"] ?? 0
        let refusedProbe = if case .error(let message) = replies[0] { RedisError.server(command: "SETRANGE", message: message).outOfMemory } else { false }
        let headroom = max(Self.fullHeadroom, refusedBytes.withLock { $0 })
        guard refusedProbe || (most > 0 && used + headroom > most) else { return nil }
        return StoreError.outOfMemory(url: url.description, reason: "used_memory \(used) bytes of maxmemory \(most), and with maxmemory-policy noeviction "
                                      + "Redis refuses writes that do not fit; writes are answered 507 until feeds are deleted or maxmemory is raised").description
    }

    public func adoptNewEpoch() async throws(StoreError) {
        do throws(RedisError) {
            let replies = try await client.run { connection throws(RedisError) in
                try connection.pipeline([["SET", self.keys.epoch, RandomID.token(), "NX"], ["GET", self.keys.epoch]].map { $0.map { Array($0.utf8) } })
            }
            guard let epoch = replies[1].string else { throw .unexpectedReply(command: "GET \(keys.epoch)", reply: replies[1].description) }
            currentEpoch.withLock { $0 = epoch }
        } catch {
            throw storeError(error)
        }
    }

    public func acquireLease(_ name: String, milliseconds: Int) async throws(StoreError) -> String? {
        do throws(RedisError) { return try await lease.acquire(name, milliseconds: milliseconds) } catch { throw storeError(error) }
    }

    public func renewLease(_ name: String, token: String, milliseconds: Int) async throws(StoreError) -> Bool {
        do throws(RedisError) { return try await lease.renew(name, token: token, milliseconds: milliseconds) } catch { throw storeError(error) }
    }

    public func releaseLease(_ name: String, token: String) async throws(StoreError) {
        do throws(RedisError) { try await lease.release(name, token: token) } catch { throw storeError(error) }
    }
}

extension RedisStore: FamilyInterest {
    /// Adds each set's keys with the time their interest ends (now, on Redis's clock, plus ARGV 1
    /// milliseconds; one `ZADD` per 500 keys), drops those past it, and keeps the set at least twice that long (a family no instance
    /// serves any more leaves nothing behind). KEYS: the sets. ARGV: 1 milliseconds, then per set the
    /// number of its keys and the keys.
    static let recordInterestScript = """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local ends = now + tonumber(ARGV[1])
        local at = 2
        for _, set in ipairs(KEYS) do
          local count = tonumber(ARGV[at])
          at = at + 1
          local pairs = {}
          for i = 1, count do
            pairs[#pairs + 1] = ends
            pairs[#pairs + 1] = ARGV[at]
            at = at + 1
            if #pairs == 1000 or i == count then
              redis.call('ZADD', set, unpack(pairs))
              pairs = {}
            end
          end
          redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
          if redis.call('PTTL', set) < 2 * tonumber(ARGV[1]) then redis.call('PEXPIRE', set, 2 * tonumber(ARGV[1])) end
        end
        return 1
        """

    /// The keys of KEYS 1 whose interest has not ended (Redis's clock).
    static let interestScript = """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
        """

    public func recordInterest(_ keys: [String: [String]], milliseconds: Int) async throws(StoreError) {
        let sets = keys.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
        guard !sets.isEmpty else { return }
        var command = ["EVAL", Self.recordInterestScript, String(sets.count)] + sets.map { self.keys.interest($0.key) } + [String(milliseconds)]
        for (_, members) in sets { command += [String(members.count)] + members }
        do throws(RedisError) {
            let reply = try await client.command(command.map { Array($0.utf8) })
            if case .error(let message) = reply { throw .server(command: "EVAL (record interest)", message: message) }
        } catch {
            throw storeError(error)
        }
    }

    public func interest(in set: String) async throws(StoreError) -> [String] {
        do throws(RedisError) {
            let reply = try await client.command("EVAL", Self.interestScript, "1", keys.interest(set))
            guard let members = reply.array?.compactMap(\.string) else { throw .unexpectedReply(command: "EVAL (interest)", reply: reply.description) }
            return members.sorted()
        } catch {
            throw storeError(error)
        }
    }
}
