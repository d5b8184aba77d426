import DiffStreamJSON
import FeedCore
import ServerSentEvents
import Synchronization
import Timekeeping

/// The presence feeds of this instance, beside the registry: for each feed `F` with presence on and
/// someone present or watching, a ``PresenceTracker`` and the derived, read-only feed it writes
/// (``PresenceFeedName``). The HTTP layer opens and closes connections here as event streams that
/// include `F` come and go, and finds the presence feed here to answer and stream it.
///
/// A presence feed is a ``Feed`` in memory: not stored, not counted against the limits (no storage
/// account), not in the registry's list, its history this instance's own (a client that resumes it
/// on another instance gets a snapshot). It is made when first asked for and dropped when no one is
/// present, no change waits and no one watches it.
///
/// With a ``PresenceSharing`` (several instances), each flush publishes this instance's share, and
/// the presence feed shows the merge of the live instances' shares (``PresenceMerge``), read again
/// after each flush and every interval while the feed is held.
public actor PresenceFeeds {
    private struct Entry {
        var tracker: PresenceTracker
        let feed: Feed
        /// Streams of the presence feed itself (they keep it from being dropped).
        var watchers = 0
        var timer: Task<Void, Never>?
        var timerAt: Double?
        /// The writes of the last flush, which the next one waits for.
        var writing: Task<Void, Never>?
        /// With sharing: what the feed shows (written only by the chain of `writing` tasks), and the
        /// task that merges the other instances' shares again every interval.
        let shown: Shown
        var polling: Task<Void, Never>?
        /// The programs reading the presence (``snapshots(of:identities:)``), by number.
        var listeners: [Int: AsyncStream<PresenceSnapshot>.Continuation] = [:]
    }

    /// The merged list a presence feed shows, set by its chain of writes one at a time.
    private final class Shown: Sendable {
        private let value: Mutex<WireSnapshot>
        init(_ snapshot: WireSnapshot) { value = Mutex(snapshot) }
        var snapshot: WireSnapshot {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    private var entries: [String: Entry] = [:]
    private var nextConnection = 0
    private var nextListener = 0
    /// The hashed presence names handed out, to the feed each stands for.
    private let hashedNames = Mutex<[String: String]>([:])
    private let transport: (any EventBroadcaster)?
    /// Metrics of the presence feeds' own, never rendered: they are not feeds of the registry.
    private let metrics = FeedMetrics()
    /// The numbers of every presence feed (``PresenceTracker/Settings/identities`` is each feed's).
    public nonisolated let settings: PresenceTracker.Settings
    private let ids: PresenceItemIDs
    private let clock: @Sendable () -> Double
    private let wallClock: @Sendable () -> Double
    private let sharing: (any PresenceSharing)?
    /// The most presence feeds held at once (`--max-presence-feeds`). Past it a feed not held has none
    /// until one is dropped: ``open(_:identities:_:)`` makes no one present, ``watch(_:identities:)``,
    /// ``read(_:identities:)`` and ``snapshots(of:identities:)`` answer nil.
    public nonisolated let maxFeeds: Int

    /// - Parameters:
    ///   - transport: what the presence feeds' events go out through (the HTTP server's).
    ///   - ids: the item ids' secret (a deployment's, to name a user alike on every instance).
    ///   - clock: monotonic seconds; `wallClock`: seconds since 1970 (an item's `since`).
    ///   - sharing: where the instances of a deployment share their presence (its secret names the
    ///     users, instead of `ids`); nil: this instance's streams only.
    ///   - maxFeeds: the most presence feeds held at once (``maxFeeds``).
    public init(transport: (any EventBroadcaster)?, settings: PresenceTracker.Settings = PresenceTracker.Settings(), ids: PresenceItemIDs = PresenceItemIDs(),
                clock: @escaping @Sendable () -> Double = MonotonicClock.now, wallClock: @escaping @Sendable () -> Double = WallClock.now,
                sharing: (any PresenceSharing)? = nil, maxFeeds: Int = 10_000) {
        self.transport = transport
        self.maxFeeds = maxFeeds
        self.settings = settings
        self.ids = sharing.map { PresenceItemIDs(secret: $0.secret) } ?? ids
        self.sharing = sharing
        self.clock = clock
        self.wallClock = wallClock
    }

    /// The presence feed's name of `feed` (remembered when hashed, so that ``target(of:)`` finds it).
    public nonisolated func name(of feed: String) -> String {
        let name = PresenceFeedName.of(feed)
        if name.hasPrefix(PresenceFeedName.hashedPrefix) { hashedNames.withLock { $0[name] = feed } }
        return name
    }

    /// The feed whose presence feed `name` is: `_presence.F` names it, a hashed name only once
    /// ``name(of:)`` handed it out. Nil for any other name.
    public nonisolated func target(of name: String) -> String? {
        if let target = PresenceFeedName.plainTarget(of: name) { return target }
        guard name.hasPrefix(PresenceFeedName.hashedPrefix) else { return nil }
        return hashedNames.withLock { $0[name] }
    }

    /// A connection to `feed` opened (an event stream that includes it): the user is present.
    /// - Returns: the connection's number, for ``close(_:connection:)``; nil when `feed` has no presence
    ///   feed and ``maxFeeds`` are held (the connection counts nowhere).
    public func open(_ feed: String, identities: Bool, _ connection: PresenceConnection) -> Int? {
        guard hasRoom(for: feed) else { return nil }
        nextConnection += 1
        let number = nextConnection
        let now = clock()
        update(feed, identities: identities) { $0.open(number, connection, now: now, wall: wallClock()) }
        return number
    }

    /// A connection to `feed` closed: its user leaves after the grace period, unless another opens.
    public func close(_ feed: String, connection: Int) {
        guard entries[feed] != nil else { return }
        let now = clock()
        update(feed, identities: settings.identities) { $0.close(connection, now: now) }
    }

    /// The presence feed of `feed` to stream (made if needed): counted as watched until ``unwatch(_:)``.
    /// Nil when it is not held and ``maxFeeds`` are (then no ``unwatch(_:)``).
    public func watch(_ feed: String, identities: Bool) async -> Feed? {
        guard hasRoom(for: feed) else { return nil }
        let made = entry(feed, identities: identities)
        entries[feed]?.watchers += 1
        await made.writing?.value
        return made.feed
    }

    /// A stream of `feed`'s presence feed ended.
    public func unwatch(_ feed: String) {
        entries[feed]?.watchers -= 1
        dropIfIdle(feed)
    }

    /// The presence feed of `feed` to read once (made if needed, then dropped when idle); nil as for
    /// ``watch(_:identities:)``.
    public func read(_ feed: String, identities: Bool) async -> Feed? {
        guard let made = await watch(feed, identities: identities) else { return nil }
        unwatch(feed)
        return made
    }

    /// Who is present on `feed`, as the presence feed shows it: what it shows now, then each change
    /// (for a hosted view model's source). Reading keeps the presence feed, like a watcher, until the
    /// sequence ends; following it makes no one present. Nil as for ``watch(_:identities:)``.
    public func snapshots(of feed: String, identities: Bool) -> AsyncStream<PresenceSnapshot>? {
        guard hasRoom(for: feed) else { return nil }
        let made = entry(feed, identities: identities)
        nextListener += 1
        let number = nextListener
        let (stream, continuation) = AsyncStream.makeStream(of: PresenceSnapshot.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(PresenceSnapshot(sharing == nil ? made.tracker.snapshot : made.shown.snapshot))
        entries[feed]?.listeners[number] = continuation
        entries[feed]?.watchers += 1
        continuation.onTermination = { _ in Task { [weak self] in await self?.stopListening(feed, number) } }
        return stream
    }

    private func stopListening(_ feed: String, _ number: Int) {
        guard entries[feed]?.listeners.removeValue(forKey: number) != nil else { return }
        unwatch(feed)
    }

    /// Tells the programs reading `feed`'s presence what it shows now.
    private func delivered(_ feed: String, _ snapshot: WireSnapshot) {
        guard let listeners = entries[feed]?.listeners, !listeners.isEmpty else { return }
        let typed = PresenceSnapshot(snapshot)
        for continuation in listeners.values { continuation.yield(typed) }
    }

    /// Who is present on `feed` as last written (nil when no one is and no one watches).
    public func snapshot(of feed: String) -> WireSnapshot? {
        entries[feed]?.tracker.snapshot
    }

    // MARK: The entries

    /// Whether `feed`'s presence feed is held, or another may be made (``maxFeeds``).
    public func hasRoom(for feed: String) -> Bool {
        entries[feed] != nil || entries.count < maxFeeds
    }

    private func entry(_ feed: String, identities: Bool) -> Entry {
        if let entry = entries[feed] { return entry }
        var settings = settings
        settings.identities = identities
        let tracker = PresenceTracker(feed: feed, settings: settings, ids: ids)
        let made = Feed(name: name(of: feed), replayLimit: 64, transport: transport, metrics: metrics, store: nil)
        let initial = tracker.snapshot
        var entry = Entry(tracker: tracker, feed: made, shown: Shown(initial))
        entry.writing = Task { _ = try? await made.write(initial, viewState: nil, options: FeedWriteOptions()) }
        if sharing != nil {
            let interval = max(settings.interval, 0.01)
            entry.polling = Task { [weak self] in
                while !Task.isCancelled {
                    // This instance's share is written again too: it lasts while it is renewed.
                    await self?.merge(feed, publishing: true)
                    try? await Task.sleep(for: .milliseconds(Int64(interval * 1000)))
                }
            }
        }
        entries[feed] = entry
        return entry
    }

    private func update(_ feed: String, identities: Bool, _ body: (inout PresenceTracker) -> Void) {
        if entries[feed] == nil { _ = entry(feed, identities: identities) }  // (a copy of an entry is not free)
        body(&entries[feed]!.tracker)
        advance(feed)
    }

    /// Writes what the tracker says is due, then waits for its next deadline.
    private func advance(_ feed: String) {
        // Taken out while it changes: a copy left in `entries` would share the tracker's storage, and
        // its first change (a grace ending) would copy every member: O(users) per step under churn.
        guard var entry = entries.removeValue(forKey: feed) else { return }
        let steps = entry.tracker.advance(now: clock())
        if !steps.isEmpty && sharing != nil {
            entries[feed] = entry
            merge(feed, publishing: true)
            entry = entries.removeValue(forKey: feed)!
        } else if !steps.isEmpty {
            let previous = entry.writing
            let target = entry.feed
            entry.writing = Task { [weak self] in
                await previous?.value
                for step in steps { _ = try? await target.write(step, viewState: nil, options: FeedWriteOptions()) }
                if let last = steps.last { await self?.delivered(feed, last) }
            }
        }
        if let deadline = entry.tracker.nextDeadline {
            if entry.timerAt.map({ deadline < $0 }) ?? true {
                entry.timer?.cancel()
                entry.timerAt = deadline
                let delay = max(deadline - clock(), 0)
                entry.timer = Task { [weak self] in
                    if delay > 0 { try? await Task.sleep(for: .milliseconds(Int64((delay * 1000).rounded(.up)))) }
                    guard !Task.isCancelled else { return }
                    await self?.fire(feed, deadline)
                }
            }
        }
        entries[feed] = entry
        dropIfIdle(feed)
    }

    /// With sharing: publishes this instance's share (when `publishing`), then writes the merge of
    /// every live instance's share, after the writes before it.
    private func merge(_ feed: String, publishing: Bool) {
        guard let sharing, var entry = entries[feed] else { return }
        let previous = entry.writing, target = entry.feed, shown = entry.shown
        let local = entry.tracker.snapshot, batchBytes = settings.batchBytes, listed = settings.listed
        let share: [UInt8]? = entry.tracker.count > 0 ? WireCodec.encode(local) : nil
        entry.writing = Task { [weak self] in
            await previous?.value
            if publishing { await sharing.publish(feed: feed, share: share) }
            let others = await sharing.shares(of: feed).compactMap { try? WireCodec.decodeSnapshot($0) }
            let merged = PresenceMerge.merge([local] + others, listed: listed)
            let steps = PresenceSteps.between(shown.snapshot, merged, batchBytes: batchBytes)
            for step in steps { _ = try? await target.write(step, viewState: nil, options: FeedWriteOptions()) }
            shown.snapshot = merged
            if !steps.isEmpty { await self?.delivered(feed, merged) }
        }
        entries[feed] = entry
    }

    private func fire(_ feed: String, _ deadline: Double) {
        guard entries[feed]?.timerAt == deadline else { return }
        entries[feed]?.timerAt = nil
        entries[feed]?.timer = nil
        advance(feed)
    }

    private func dropIfIdle(_ feed: String) {
        guard entries[feed]?.watchers == 0, entries[feed]?.tracker.isIdle == true, let entry = entries[feed] else { return }
        entry.timer?.cancel()
        entry.polling?.cancel()
        for continuation in entry.listeners.values { continuation.finish() }
        entries[feed] = nil
        if let sharing {
            // This instance's share goes with the feed (once the writes before it are done).
            let previous = entry.writing
            Task { await previous?.value; await sharing.publish(feed: feed, share: nil) }
        }
    }
}
