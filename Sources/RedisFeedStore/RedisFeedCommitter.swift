import Redis
import FeedStorage
import Timekeeping

/// One write of one feed, as the commit script takes it. Everything but the names is opaque bytes, as
/// in the `FeedStore` seam: the snapshot as `WireCodec` encodes it, the batch as the SSE event sent.
public struct RedisFeedWrite: Sendable, Equatable {
    public var feed: String
    /// The epoch this instance read at start (``RedisKeys/epoch``).
    public var epoch: String
    /// The version the batch was computed against; 0 creates the feed.
    public var baseVersion: Int
    /// The feed's history (a new one when creating).
    public var history: String
    public var snapshot: [UInt8]
    /// Replaces the stored view-model state when given.
    public var viewState: [UInt8]?
    /// The batch event for version `baseVersion + 1`; empty when creating.
    public var batch: [UInt8]
    /// `--replay`: the history stream keeps this many batches.
    public var window: Int
    /// The write's id: the client's `Idempotency-Key`, or one the instance draws. One id, one commit.
    public var writeID: String
    /// The lease's fencing token, for a view model's source; nil for writes that need no lease.
    public var fence: String?
    /// What the client is answered, kept with the write id so a retry gets the same answer.
    public var answer: [UInt8]
    /// The state the stored one must be (a view model's change computed from it); nil: not checked.
    public var expectedState: [UInt8]?
    /// The most feeds counted over every instance (nil: no limit), and whether this feed counts.
    public var maxFeeds: Int?
    public var counted: Bool
    /// The most bytes of every feed's snapshot and window together (nil: no limit).
    public var maxBytes: Int?
    /// The write id is a client's `Idempotency-Key`: its answer is kept ``RedisFeedCommitter/writeTTL``;
    /// a drawn one's only ``RedisFeedCommitter/drawnTTL``.
    public var clientKey = true

    public init(feed: String, epoch: String, baseVersion: Int, history: String, snapshot: [UInt8], viewState: [UInt8]? = nil,
                batch: [UInt8], window: Int, writeID: String, fence: String? = nil, answer: [UInt8] = [],
                expectedState: [UInt8]? = nil, maxFeeds: Int? = nil, counted: Bool = true, maxBytes: Int? = nil, clientKey: Bool = true) {
        self.feed = feed
        self.epoch = epoch
        self.baseVersion = baseVersion
        self.history = history
        self.snapshot = snapshot
        self.viewState = viewState
        self.batch = batch
        self.window = window
        self.writeID = writeID
        self.fence = fence
        self.answer = answer
        self.expectedState = expectedState
        self.maxFeeds = maxFeeds
        self.counted = counted
        self.maxBytes = maxBytes
        self.clientKey = clientKey
    }
}

/// What became of a commit.
public enum RedisCommitOutcome: Sendable, Equatable {
    /// Committed at `version`. `first` is false when the write id had been committed before (a retry,
    /// or an answer read back after it was lost): `answer` is then the first commit's.
    case committed(version: Int, answer: [UInt8], first: Bool)
    /// The feed is not at the base version (another instance wrote first): compute again against this.
    case conflict(version: Int, history: String)
    /// Redis's epoch is not this instance's (nil: there is none). Redis lost data: every feed this
    /// instance holds starts a new history.
    case epochChanged(current: String?)
    /// The lease is held under another fencing token (nil: by no one): this instance must stop writing.
    case fenced(holder: String?)
    /// The answer was lost and the attempt was given up before it ran: nothing was written. Compute again.
    case notCommitted
    /// A limit counted over every instance would be passed (`feeds` or `bytes`): nothing was written.
    case limit(kind: String, used: Int, most: Int)
}

/// Commits feed writes with ``RedisScripts/commit``, and settles lost answers by reading them back.
///
/// A commit whose answer is lost (``RedisError/outcomeUnknown``: a timeout, a dropped connection) may
/// or may not have run. ``commit(_:)`` then runs ``RedisScripts/resolve`` on a new connection: either
/// the write id is there (the write happened: its answer), or the attempt is marked given up, so that
/// if the script still reaches Redis it changes nothing. It never guesses; if Redis cannot be reached
/// to settle it, the error says the outcome is unknown, and a retry with the same write id settles it.
public struct RedisFeedCommitter: Sendable {
    public let client: RedisClient
    public let keys: RedisKeys
    /// Seconds a write id (and a given-up attempt) is kept: how long a retry with the same
    /// `Idempotency-Key` gets the first answer.
    public let writeTTL: Int
    /// Seconds the answer of a write id the instance drew is kept at most: settling a lost answer follows
    /// the failure at once, on a new connection (and ``drawnCap`` bounds them by count too).
    public static let drawnTTL = 600
    /// The committing instance's id, published with each commit (``RedisStore/instanceID``).
    public let origin: String
    /// The most clients' `Idempotency-Key`s kept per feed (``RedisKeys/writeOrder(_:keyed:)``): a retry
    /// gets the first answer within ``writeTTL`` and while its key is among the feed's latest this many;
    /// the oldest is dropped first.
    public let keyedCap: Int
    /// The most drawn write ids kept per feed: settling a lost answer follows it at once, and an id
    /// dropped meanwhile makes the settling say "unknown", never "not written" (``RedisScripts/resolve``).
    public let drawnCap: Int
    /// The default ``keyedCap``: about 1,000 × 300 bytes, some 300 kB, for a feed written that often with keys.
    public static let defaultKeyedCap = 1_000
    /// The default ``drawnCap``.
    public static let defaultDrawnCap = 512
    private let shas: ScriptCache

    public init(client: RedisClient, keys: RedisKeys, writeTTL: Int = 24 * 3600, origin: String = "",
                keyedCap: Int = RedisFeedCommitter.defaultKeyedCap, drawnCap: Int = RedisFeedCommitter.defaultDrawnCap) {
        self.client = client
        self.keys = keys
        self.writeTTL = writeTTL
        self.origin = origin
        self.keyedCap = max(1, keyedCap)
        self.drawnCap = max(1, drawnCap)
        self.shas = ScriptCache()
    }

    /// The ids kept for a write id's kind: `(seconds, most)`.
    private func retention(clientKey: Bool) -> (ttl: Int, cap: Int) {
        clientKey ? (writeTTL, keyedCap) : (min(writeTTL, Self.drawnTTL), drawnCap)
    }

    /// Runs the commit script once (a fresh attempt), settling a lost answer.
    /// - Throws: ``RedisError`` when Redis cannot be reached, or did not answer and could not be asked
    ///   again; the write may then have happened (``RedisError/outcomeUnknown``).
    public func commit(_ write: RedisFeedWrite) async throws(RedisError) -> RedisCommitOutcome {
        let attempt = RandomID.perWrite(), sent = MonotonicClock.now()
        do {
            return try await run(write, attempt: attempt)
        } catch where error.outcomeUnknown {
            return try await settle(feed: write.feed, writeID: write.writeID, attempt: attempt, sent: sent, lost: error)
        }
    }

    /// Deletes a feed (``RedisScripts/delete``), settling a lost answer as ``commit(_:)`` does.
    /// - Returns: `.committed(version: 1, …)` when the feed existed, `version: 0` when it did not.
    public func delete(feed: String, epoch: String, writeID: String, clientKey: Bool = true, answer: [UInt8] = []) async throws(RedisError) -> RedisCommitOutcome {
        let attempt = RandomID.perWrite(), sent = MonotonicClock.now()
        do {
            let (ttl, cap) = retention(clientKey: clientKey)
            let outcome = try Self.outcome(try await evaluate(RedisScripts.delete, name: "delete", capacity: answer.count + writeID.utf8.count + 640) { command in
                appendScriptKeys(feed, writeID: writeID, keyed: clientKey, attempt: attempt, fence: nil, to: &command)
                command.append(epoch)
                command.append(ttl)
                command.append(self.keys.channel(feed))
                command.append(answer)
                command.append(writeID)
                command.append(cap)
                command.append(writeTTL)
            }, first: true)
            if case .committed(let existed, _, true) = outcome { return .committed(version: existed, answer: answer, first: true) }
            return outcome
        } catch where error.outcomeUnknown {
            return try await settle(feed: feed, writeID: writeID, attempt: attempt, sent: sent, lost: error)
        }
    }

    /// Replaces a feed's view-model state at `version` of `history` (``RedisScripts/viewState``), settling a lost answer.
    /// - Parameter history: the history `version` belongs to (nil: not checked).
    /// - Parameter expectedState: the state the stored one must be (nil: not checked).
    /// - Parameter fence: a lease's fencing token the lease must still hold (nil: none).
    public func setViewState(feed: String, epoch: String, version: Int, history: String? = nil, state: [UInt8], writeID: String, clientKey: Bool = true,
                             expectedState: [UInt8]? = nil, fence: String? = nil, answer: [UInt8] = []) async throws(RedisError) -> RedisCommitOutcome {
        let attempt = RandomID.perWrite(), sent = MonotonicClock.now()
        do {
            let (ttl, cap) = retention(clientKey: clientKey)
            let capacity = state.count + (expectedState?.count ?? 0) + answer.count + writeID.utf8.count + 640
            let outcome = try Self.outcome(try await evaluate(RedisScripts.viewState, name: "viewState", capacity: capacity) { command in
                appendScriptKeys(feed, writeID: writeID, keyed: clientKey, attempt: attempt, fence: fence, to: &command)
                command.append(epoch)
                command.append(version)
                command.append(state)
                command.append(ttl)
                command.append(expectedState == nil ? "0" : "1")
                command.append(expectedState ?? [])
                command.append(self.keys.channel(feed))
                command.append(answer)
                command.append(origin)
                command.append(history ?? "")
                command.append(fence ?? "")
                command.append(writeID)
                command.append(cap)
                command.append(writeTTL)
            }, first: true)
            if case .committed(let version, _, true) = outcome { return .committed(version: version, answer: answer, first: true) }
            return outcome
        } catch where error.outcomeUnknown {
            return try await settle(feed: feed, writeID: writeID, attempt: attempt, sent: sent, lost: error)
        }
    }

    /// Gives a feed found at `version` of `history` a new history (``RedisScripts/newHistory``). Safe
    /// to repeat: a second run finds another history and answers `conflict`.
    public func newHistory(feed: String, epoch: String, from history: String, at version: Int, to fresh: String) async throws(RedisError) -> RedisCommitOutcome {
        return try Self.outcome(try await evaluate(RedisScripts.newHistory, name: "newHistory", keyCount: 4) { command in
            for key in [keys.feed(feed), keys.batches(feed), keys.epoch, keys.usage] { command.append(key) }
            for argument in [epoch, history, String(version), fresh, keys.channel(feed)] { command.append(argument) }
        }, first: true)
    }

    /// Runs the commit script for `attempt` and decodes its answer (no settling).
    public func run(_ write: RedisFeedWrite, attempt: String) async throws(RedisError) -> RedisCommitOutcome {
        let capacity = write.snapshot.count + write.batch.count + write.answer.count + (write.viewState?.count ?? 0) + (write.expectedState?.count ?? 0)
            + write.writeID.utf8.count + 768
        let (ttl, cap) = retention(clientKey: write.clientKey)
        let reply = try await evaluate(RedisScripts.commit, name: "commit", capacity: capacity) { command in
            appendScriptKeys(write.feed, writeID: write.writeID, keyed: write.clientKey, attempt: attempt, fence: write.fence, to: &command)
            command.append(write.epoch)
            command.append(write.baseVersion)
            command.append(write.history)
            command.append(write.snapshot)
            command.append(write.viewState == nil ? "0" : "1")
            command.append(write.viewState ?? [])
            command.append(write.batch)
            command.append(max(0, write.window))
            command.append(ttl)
            command.append(keys.channel(write.feed))
            command.append(write.fence ?? "")
            command.append(write.answer)
            command.append(write.expectedState == nil ? "0" : "1")
            command.append(write.expectedState ?? [])
            command.append(write.maxFeeds ?? -1)
            command.append(write.maxBytes ?? -1)
            command.append(write.counted ? "1" : "0")
            command.append(origin)
            command.append(write.writeID)
            command.append(cap)
            command.append(writeTTL)
        }
        let outcome = try Self.outcome(reply, first: true)
        if case .committed(let version, _, true) = outcome { return .committed(version: version, answer: write.answer, first: true) }
        return outcome
    }

    /// Appends the scripts' keys, in the order ``RedisScripts/commit`` names them; the lease is the one
    /// `fence` is a token of (``RedisLease/leaseName(ofToken:)``: a family's shard), else the feed's own.
    private func appendScriptKeys(_ feed: String, writeID: String, keyed: Bool, attempt: String, fence: String?, to command: inout RedisCommand) {
        keys.appendScriptKeys(feed: feed, writeID: writeID, keyed: keyed, attempt: attempt, lease: fence.flatMap(RedisLease.leaseName(ofToken:)) ?? feed, to: &command)
    }

    /// ``resolve(feed:writeID:attempt:)``; when that fails too, the error of the call whose answer was
    /// `lost` (its outcome stays unknown: a retry with the same write id settles it), never the
    /// settling call's own, which could read as "nothing was written".
    /// `sent` is when the attempt was sent (``MonotonicClock``).
    private func settle(feed: String, writeID: String, attempt: String, sent: Double, lost: RedisError) async throws(RedisError) -> RedisCommitOutcome {
        do { return try await resolve(feed: feed, writeID: writeID, attempt: attempt, sentMillisecondsAgo: Int(((MonotonicClock.now() - sent) * 1000).rounded(.up))) } catch { throw lost }
    }

    /// Settles an attempt whose answer was lost (``RedisScripts/resolve``), sent `sentMillisecondsAgo`.
    /// - Throws: ``RedisError/server(command:message:)`` when Redis cannot say whether it was committed
    ///   (its id may have been dropped by the cap since): the attempt can no longer run, but may have.
    public func resolve(feed: String, writeID: String, attempt: String, sentMillisecondsAgo: Int = 0) async throws(RedisError) -> RedisCommitOutcome {
        let keys = [self.keys.write(feed, id: writeID), self.keys.attempt(feed, nonce: attempt), self.keys.writes(feed)]
        let reply = try await evaluate(RedisScripts.resolve, name: "resolve", keyCount: 3) { command in
            for key in keys { command.append(key) }
            command.append(writeTTL)
            command.append(writeID)
            command.append(max(0, sentMillisecondsAgo))
        }
        if reply.array?.first?.string == "unknown" {
            throw .server(command: "EVALSHA (resolve)", message: "the write id \(writeID) of \(feed) may have been dropped by its cap since the attempt was sent: whether it was committed cannot be said")
        }
        return try Self.outcome(reply, first: false)
    }

    /// `EVALSHA`, pipelined with the client's other commands, loading the script first (`SCRIPT LOAD`)
    /// when this process has not, or when Redis forgot it (`NOSCRIPT` after a restart or `SCRIPT FLUSH`:
    /// the script did not run, so running it again is safe).
    /// - Parameters:
    ///   - keyCount: the keys `fill` appends first (the commit's ten, unless said).
    ///   - capacity: about the bytes `fill` appends.
    ///   - fill: appends the keys, then the arguments, to `EVALSHA <sha> <keyCount>`.
    private func evaluate(_ script: String, name: String, keyCount: Int = 10, capacity: Int = 512,
                          _ fill: (inout RedisCommand) -> Void) async throws(RedisError) -> RedisReply {
        for _ in 0..<2 {
            let sha: String
            if let known = shas.sha(of: name) {
                sha = known
            } else {
                let loaded = try await client.command([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(script.utf8)])
                guard case .bulk(let bytes) = loaded else { throw Self.refused("SCRIPT LOAD (\(name))", loaded) }
                sha = String(decoding: bytes, as: UTF8.self)
                shas.remember(sha, for: name)
            }
            var command = RedisCommand("EVALSHA", capacity: capacity + sha.utf8.count)
            command.append(sha)
            command.append(keyCount)
            fill(&command)
            let reply = try await client.command(command)
            if case .error(let message) = reply, message.hasPrefix("NOSCRIPT") {
                shas.forget(name)
                continue
            }
            if case .error = reply { throw Self.refused("EVALSHA (\(name))", reply) }
            return reply
        }
        throw .server(command: "EVALSHA (\(name))", message: "NOSCRIPT twice after SCRIPT LOAD")
    }

    private static func refused(_ command: String, _ reply: RedisReply) -> RedisError {
        if case .error(let message) = reply { return .server(command: command, message: message) }
        return .unexpectedReply(command: command, reply: reply.description)
    }

    /// Decodes a script's answer.
    static func outcome(_ reply: RedisReply, first: Bool) throws(RedisError) -> RedisCommitOutcome {
        guard let parts = reply.array, let tag = parts.first?.string else { throw .unexpectedReply(command: "EVALSHA", reply: reply.description) }
        switch tag {
        case "ok":
            guard parts.count == 2, let version = parts[1].integer else { break }
            return .committed(version: version, answer: [], first: first)
        case "done":
            guard parts.count == 2, let record = parts[1].bytes, let parsed = parseDone(record) else { break }
            return .committed(version: parsed.version, answer: parsed.answer, first: false)
        case "conflict":
            guard parts.count == 3, let version = parts[1].integer else { break }
            return .conflict(version: version, history: parts[2].string ?? "")
        case "epoch":
            let current = parts.count > 1 ? parts[1].string ?? "" : ""
            return .epochChanged(current: current.isEmpty ? nil : current)
        case "fenced":
            let holder = parts.count > 1 ? parts[1].string ?? "" : ""
            return .fenced(holder: holder.isEmpty ? nil : holder)
        case "aborted":
            return .notCommitted
        case "limit":
            guard parts.count == 4, let kind = parts[1].string, let used = parts[2].integer, let most = parts[3].integer ?? parts[3].string.flatMap({ Int($0) }) else { break }
            return .limit(kind: kind, used: used, most: most)
        default: break
        }
        throw .unexpectedReply(command: "EVALSHA", reply: reply.description)
    }

    /// `done <version> <answer>` → the version and the answer's bytes.
    static func parseDone(_ record: [UInt8]) -> (version: Int, answer: [UInt8])? {
        let prefix = Array("done ".utf8)
        guard record.starts(with: prefix) else { return nil }
        let rest = record[prefix.count...]
        guard let space = rest.firstIndex(of: UInt8(ascii: " ")), let version = Int(String(decoding: rest[..<space], as: UTF8.self)) else { return nil }
        return (version, Array(rest[(space + 1)...]))
    }

}
