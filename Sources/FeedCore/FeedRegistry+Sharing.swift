import DiffStreamJSON
import FeedStorage
import HTTPCore
import Logging

/// Sharing feeds with other instances through a shared store (its events are followed by
/// `SharedFeedFollower`, module `FeedReplication`): checking the positions of the copies held,
/// dropping idle copies, outages and lost data.
extension FeedRegistry {
    /// Sharing stopped (shutdown; `SharedFeedFollower.stop()`, module `FeedReplication`): failures of
    /// calls still in flight are no longer outages.
    package func stopAnnouncing() {
        stopped = true
    }

    /// The copy of `name` held here, if any (a store's event for a feed not held is for no one here).
    package func held(_ name: String) -> Feed? {
        feeds[name]
    }

    /// Brings ``storage`` (`/metrics`' feeds and bytes) to what the shared store counted over every
    /// instance; nothing without one, or when it cannot be reached.
    public func refreshUsage() async {
        guard let shared, let usage = try? await shared.usage() else { return }
        storage.setUsage(feeds: usage.feeds, bytes: usage.bytes)
    }

    /// The check `SharedFeedFollower`'s timer (module `FeedReplication`) runs (call it to check now).
    /// One pipeline of every held feed's position: a feed that is not where its copy is gets refreshed; an epoch that is not ours means the store lost its data; a failure is an outage.
    public func checkPositions() async {
        guard let shared else { return }
        await dropIdleFeeds(shared)
        let names = Array(feeds.keys)
        let positions: StorePositions
        let call = askCommands()
        do {
            positions = try await shared.positions(names)
        } catch {
            await setCommandsDown(error.description, call: call)
            return
        }
        await setCommandsDown(nil, call: call)
        guard positions.intact else {
            await storeLostData()
            return
        }
        for name in names {
            guard let feed = feeds[name] else { continue }
            if await feed.position != positions.feeds[name] { await feed.queueRefresh() }
        }
    }

    /// Drops the copies that nothing has needed (``Feed/isIdle``) for ``idleFeedLifetime`` seconds, and
    /// stops following them; the next use reads the feed again. A copy in use counts as used now, so the
    /// time runs from when it was last needed (a stream that ends after an hour keeps the copy for the
    /// reconnect). Nothing is dropped during an outage: the copies are what new subscribers get then.
    func dropIdleFeeds(_ shared: any SharedFeedStore) async {
        for (name, feed) in feeds {
            let idle = await feed.isIdle
            guard feeds[name] === feed else { continue }  // dropped or replaced during the hop
            let now = clock()
            guard idle else {
                lastUsed[name] = now
                continue
            }
            guard outage == nil else { continue }
            // A use during the hop (``cached(_:)``) moved `lastUsed` and keeps the copy.
            guard lastUsed[name, default: -.infinity] <= now - idleFeedLifetime else { continue }
            feeds[name] = nil
            lastUsed[name] = nil
            metrics.removeFeed(name)
            shared.unfollow(name)
        }
    }

    /// The feed to subscribe to for `feed`, marked used: `feed` itself, unless its copy was dropped as
    /// idle since it was looked up (then the copy held now, read again if need be). The API calls it
    /// right before subscribing, so that no subscription lands on a dropped copy, however long the
    /// request took between its lookup and its subscription.
    public func current(_ feed: Feed) async -> Feed {
        guard shared != nil else { return feed }
        if feeds[feed.name] === feed {
            lastUsed[feed.name] = clock()
            return feed
        }
        return (try? await cached(feed.name)) ?? feed
    }

    /// Whether the shared store can be reached and holds this instance's data (nil: ready), checked
    /// now: `GET /readyz`. Not ready while its events are down either (after a restart of the store, until
    /// the pub/sub connection is back): streams opened then would be told of the outage. Always ready
    /// without a shared store.
    public func readiness() async -> String? {
        guard let shared else { return nil }
        let call = askCommands()
        do {
            let positions = try await shared.positions([])
            if !positions.intact {
                await storeLostData()
                return eventsDown
            }
            await setCommandsDown(nil, call: call)
            return eventsDown  // commands answer, but commits from other instances do not arrive yet
        } catch {
            await setCommandsDown(error.description, call: call)
            return error.description
        }
    }

    /// Records why the store's commands fail (nil: they work), and tells subscribers when the store
    /// as a whole becomes unavailable or available again.
    func setCommandsDown(_ detail: String?, call: Int) async {
        guard call > commandsHeard else { return }  // a later call's result is recorded already
        commandsHeard = call
        let before = outage
        commandsDown = detail
        await announce(from: before)
    }

    /// The number of a call to the store's commands that starts now, for ``setCommandsDown(_:call:)``.
    func askCommands() -> Int {
        commandsAsked += 1
        return commandsAsked
    }

    /// Records why the store's events stopped (nil: they come again), as ``setCommandsDown(_:call:)``.
    package func setEventsDown(_ detail: String?) async {
        let before = outage
        eventsDown = detail
        await announce(from: before)
    }

    func announce(from before: String?) async {
        guard !stopped else { return }
        let detail = outage
        guard (detail == nil) != (before == nil) else { return }
        let kind = shared?.kind ?? "the store"
        if let detail { sharingLogger.warning("\(kind) unavailable: \(detail)") } else { sharingLogger.info("\(kind) available again") }
        for feed in feeds.values { await tellOutage(feed) }
    }

    /// Brings `feed`'s outage to the registry's, as it is when the feed has taken it: another change
    /// during the hop (announced by a loop of its own that may have passed this feed already) is told
    /// too, so no feed is left with a stale outage.
    func tellOutage(_ feed: Feed) async {
        var told: String??
        while told != .some(outage) {
            let now = outage
            await feed.setOutage(now)
            told = .some(now)
        }
    }

    /// The shared store lost its data (a flushed database, an AOF gone): adopt its new epoch, end
    /// every subscription with `event: deleted`, and read each feed again (an old backup may hold it).
    package func storeLostData() async {
        if let losing {  // one at a time; a second caller waits for the first to finish
            await losing.value
            return
        }
        let task = Task { await self.recoverLostData() }
        losing = task
        await task.value
        losing = nil
    }

    func recoverLostData() async {
        guard let shared else { return }
        sharingLogger.error("\(shared.kind) lost its data (its epoch is gone or another): every feed starts a new history")
        let call = askCommands()
        do { try await shared.adoptNewEpoch() } catch {
            await setCommandsDown(error.description, call: call)
            return
        }
        for feed in feeds.values {
            await feed.dropForLostData()
            await feed.queueRefresh()
        }
    }
}
