import FeedCore
import FeedStorage

/// Keeps a registry's copies of a shared store's feeds up to date (decision 0006): it follows the
/// store's events (commits and deletes of other instances reach the copies held, a gap or a new
/// subscription queues a refresh, the events' outages are told to subscribers) and checks the position
/// of every copy held on a timer (``SharedFeeds/checkPositions()``: idle copies dropped, copies behind
/// refreshed, outages and lost data found). Without a shared store, it does nothing.
public actor SharedFeedFollower {
    /// The copies this keeps up to date (nil: the registry shares nothing).
    public nonisolated let copies: SharedFeeds?
    var tasks: [Task<Void, Never>] = []

    public init(registry: FeedRegistry) {
        self.copies = registry.sharedFeeds
    }

    /// Starts following the shared store: the store's events, and a position check of every feed held
    /// every `checkInterval` seconds (and after the store's events were interrupted).
    public func start(checkInterval: Double = 2) {
        guard let copies, tasks.isEmpty else { return }
        let events = copies.store.events
        tasks.append(Task { [weak copies] in
            for await event in events {
                guard let copies else { return }
                await Self.take(event, into: copies)
            }
        })
        tasks.append(Task { [weak copies] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(checkInterval))
                guard let copies else { return }
                await copies.checkPositions()
            }
        })
    }

    /// Stops following the shared store (at shutdown): failures of calls still in flight are no longer
    /// told as outages.
    public func stop() async {
        for task in tasks { task.cancel() }
        tasks = []
        await copies?.stopAnnouncing()
    }

    /// One event of the store, brought to the copy it concerns (none when the copy is not held).
    static func take(_ event: SharedStoreEvent, into copies: SharedFeeds) async {
        switch event {
        case .committed(let name, let history, let version, let batch, let snapshot, let state):
            await copies.held(name)?.remoteCommit(history: history, version: version, batch: batch, snapshot: snapshot, state: state)
        case .deleted(let name, let history):
            await copies.held(name)?.remoteDelete(history: history)
        case .following(let name):
            await copies.held(name)?.queueRefresh()
        case .interrupted(let reason):
            await copies.setEventsDown(reason)
        case .connected:
            await copies.setEventsDown(nil)
        }
    }
}
