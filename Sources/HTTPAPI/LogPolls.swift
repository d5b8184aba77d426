import FeedCore
import Synchronization

/// The ``LogPollGroup`` of each feed with live log reads waiting: a reader joins its feed's group,
/// made when the first arrives and dropped once it has ended. Keyed by the ``Feed`` itself, as
/// ``TaggedFeeds`` is: a shared store's copy dropped as idle and read again gets groups of its own.
/// At shutdown, ``shutDown()`` wakes every reader, and none waits from then on.
package final class LogPolls: Sendable {
    private struct State {
        var groups: [ObjectIdentifier: LogPollGroup] = [:]
        var shutDown = false
    }

    private let state = Mutex(State())

    package init() {}

    /// How many groups there are (one per feed with readers waiting).
    package var count: Int { state.withLock { $0.groups.count } }

    /// Waits at `position` of `feed` for its next events, at most `seconds`
    /// (``LogPollGroup/wait(at:seconds:)``); never ``LogWake/ended``.
    package func wait(on feed: Feed, at position: EventID, seconds: Double) async -> LogWake {
        let key = ObjectIdentifier(feed)
        while true {
            let made = state.withLock { state -> (LogPollGroup, Bool)? in
                guard !state.shutDown else { return nil }
                if let group = state.groups[key] { return (group, false) }
                let group = LogPollGroup(feed: feed)
                state.groups[key] = group
                return (group, true)
            }
            guard let made else { return .shutdown }
            let (group, isNew) = made
            if isNew { group.onTermination { [self] in drop(group, key) } }
            let wake = await group.wait(at: position, seconds: seconds)
            if wake != .ended { return wake }
            drop(group, key)
        }
    }

    /// Wakes every waiting reader (``LogWake/shutdown``); from now on, none waits.
    package func shutDown() {
        let groups = state.withLock { state in
            state.shutDown = true
            return Array(state.groups.values)
        }
        for group in groups { group.wakeAll(.shutdown) }
    }

    private func drop(_ group: LogPollGroup, _ key: ObjectIdentifier) {
        state.withLock { state in
            if state.groups[key] === group { state.groups[key] = nil }
        }
    }
}
