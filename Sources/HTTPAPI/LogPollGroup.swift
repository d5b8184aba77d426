import FeedCore
import HTTPCore
import Synchronization

/// Why a live log read's wait ended (``LogPollGroup/wait(at:seconds:)``).
package enum LogWake: Equatable, Sendable {
    /// The feed sent these events (a batch, usually), parsed once for every reader it wakes.
    case events([EventFields])
    /// Nothing came within the wait.
    case timeout
    /// The feed was deleted (or does not exist).
    case deleted
    /// The position is not the head (batches follow it, or it is of another history): read again.
    case readAgain
    /// The server is shutting down.
    case shutdown
    /// This group ended before the reader joined: join the feed's next group.
    case ended
}

/// The live log reads waiting at one feed's head, subscribed to the ``Feed`` as one subscriber (a
/// ``SubscriberGroup``, counted as its waiters, as ``TaggedFanOut`` is for multi-feed streams): a feed
/// with only pollers is followed (with a shared store, it is not dropped as idle), and a batch is
/// handed to the group once, whatever the number of waiters.
///
/// A reader joins on the feed's actor (``Feed/join(_:lastEventID:admit:)``), so it waits only when its
/// position is the head at that moment, in order with the broadcasts: no batch slips between its
/// read and its wait. The first event the feed sends wakes every waiter with it; the group then has
/// no waiter and ends (the feed forgets it; the next reads make a new one).
package final class LogPollGroup: SubscriberGroup {
    private struct State {
        /// Every reader in the group, by its id: joined (counted) or still joining.
        var waiters: [Int: Waiter] = [:]
        var ended = false
        var onTermination: [@Sendable () -> Void] = []
    }

    private struct Waiter {
        var continuation: CheckedContinuation<LogWake, Never>
        var joined = false
        var timer: Task<Void, Never>?
    }

    package let id: Int
    package let feed: Feed
    private let state = Mutex(State())
    private static let waiterIDs = Atomic<Int>(0)

    package init(feed: Feed) {
        self.id = SubscriberGroupID.next()
        self.feed = feed
    }

    package var memberCount: Int { state.withLock { state in state.waiters.values.count(where: \.joined) } }

    package var hasEnded: Bool { state.withLock { $0.ended } }

    /// Waits at `position` for the feed's next events, at most `seconds`.
    package func wait(at position: EventID, seconds: Double) async -> LogWake {
        let waiter = Self.waiterIDs.add(1, ordering: .relaxed).newValue
        return await withCheckedContinuation { continuation in
            let admitted = state.withLock { state -> Bool in
                guard !state.ended else { return false }
                state.waiters[waiter] = Waiter(continuation: continuation)
                return true
            }
            guard admitted else { return continuation.resume(returning: .ended) }
            Task {
                await feed.join(self, lastEventID: position.description) { opening, _ in
                    self.admit(waiter, opening, seconds: seconds)
                }
            }
        }
    }

    /// On the feed's actor: the reader waits when its position is the feed's head (or the copy is
    /// behind it, and the store's events will bring what follows); else it is woken at once.
    private func admit(_ waiter: Int, _ opening: FeedOpening, seconds: Double) -> Bool {
        let wake: LogWake?
        switch opening {
        case .missed(nil), .behind: wake = nil
        case .deleted: wake = .deleted
        case .missed, .snapshot: wake = .readAgain
        }
        if let wake {
            let woken = state.withLock { $0.waiters.removeValue(forKey: waiter) }
            woken?.continuation.resume(returning: wake)
            return false
        }
        let joined = state.withLock { state -> Bool in
            guard !state.ended, state.waiters[waiter] != nil else { return false }
            state.waiters[waiter]!.joined = true
            state.waiters[waiter]!.timer = Task { [self] in
                try? await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up))))
                if !Task.isCancelled { leave(waiter, with: .timeout) }
            }
            return true
        }
        if !joined { state.withLock { $0.waiters.removeValue(forKey: waiter) }?.continuation.resume(returning: .ended) }
        return joined
    }

    /// Reader `waiter` stops waiting (its time is up): the last one ends the group.
    private func leave(_ waiter: Int, with wake: LogWake) {
        let (removed, last) = state.withLock { state -> (Waiter?, Bool) in
            guard !state.ended, let removed = state.waiters.removeValue(forKey: waiter) else { return (nil, false) }
            if state.waiters.isEmpty { state.ended = true }
            return (removed, state.waiters.isEmpty)
        }
        guard let removed else { return }
        removed.continuation.resume(returning: wake)
        if last { runTermination() } else { Task { [self] in await feed.recount(self) } }
    }

    /// Wakes every reader with `wake` and ends the group.
    package func wakeAll(_ wake: LogWake) {
        let waiters = state.withLock { state -> [Waiter] in
            guard !state.ended else { return [] }
            state.ended = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: wake)
        }
        runTermination()
    }

    private func runTermination() {
        let actions = state.withLock { state in
            defer { state.onTermination = [] }
            return state.onTermination
        }
        for action in actions { action() }
    }

    // MARK: EventSink, as the feed sees it

    /// The feed's next events: every reader is woken with them, sliced into their fields once.
    package func send(_ payload: EventPayload) {
        guard memberCount > 0 else { return }
        wakeAll(.events(EventFields.parse(payload.bytes)))
    }

    package func resume(with payload: EventPayload) { send(payload) }

    /// The feed was deleted.
    package func end(with final: EventPayload) { wakeAll(.deleted) }

    package func close() { wakeAll(.readAgain) }

    package func end(withLast last: @escaping @Sendable () -> EventPayload?) { wakeAll(.deleted) }

    package func onTermination(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            guard !state.ended else { return true }
            state.onTermination.append(action)
            return false
        }
        if runNow { action() }
    }

    /// It never falls behind: never called.
    package func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) {}
}

/// Ids of the subscriber groups of this module (``TaggedFanOut``, ``LogPollGroup``): negative, never
/// equal to a transport's own stream ids or to each other's, which share a feed's subscriber table.
package enum SubscriberGroupID {
    private static let ids = Atomic<Int>(0)

    package static func next() -> Int { ids.subtract(1, ordering: .relaxed).newValue }
}
