import CoreMetrics
import DiffStreamJSON
import FeedCore
import FeedReplication
import FeedStorage
import Foundation
import Synchronization

/// A family of feeds (issue 38): one view model hosted under a prefix, one instance per key
/// (`home.alice`, `home.bob`), made by the loader on first use and dropped when idle; the lifetime rules
/// are ``FamilyRoster``'s (decision 0007).
///
/// - Concurrent first uses of a key run the loader once; the others wait for it.
/// - A loader that throws makes nothing (the request gets its message, the next use tries again); one
///   that throws ``NoSuchMember`` is answered `404` from memory for a while; one that takes longer than
///   ``FamilyLimits/loaderTimeout`` is abandoned.
/// - A member with subscribers, or used within ``FamilyLimits/idle`` seconds, stays; otherwise it is
///   dropped: its sources stop and its feed leaves the registry. Without a durable store for members,
///   the next use starts a new history (a client resuming gets a snapshot).
/// - With a store several instances share (`--redis`), a member's feed is a shared feed: any instance
///   makes it, actions run once whichever instance takes them, a drop leaves its state in the store, and
///   its sources run on the holder of its shard's lease (``FamilyShards``, decision 0008).
public actor ViewModelFamily<Model: HostedViewModel> {
    /// Members are named `prefix.KEY`.
    public nonisolated let prefix: String
    public nonisolated let model: Model
    public nonisolated let limits: FamilyLimits
    /// Where a member's state comes from when it is made again.
    public nonisolated let truth: FamilyTruth
    let registry: FeedRegistry
    /// Where members are kept while dropped and across restarts (nil: in memory only).
    let kept: MemberStore?
    let load: @Sendable (FamilyMember<Model>) async throws -> Model.State
    let clock: @Sendable () -> Double
    var roster: FamilyRoster
    var members: [String: (host: ViewModelHost<Model>, sources: [Task<Void, any Error>])] = [:]
    var waiting: [FamilyRoster.LoadTicket: [CheckedContinuation<Result<ViewModelHost<Model>, ViewModelError>, Never>]] = [:]
    var ticker: Task<Void, Never>?
    /// The lease shards of the keys (decision 0008), with a store several instances share.
    public nonisolated let shards: FamilyShards
    /// The shared store's record of which keys are live where (nil: no shared store, or one without it,
    /// where each member's sources run under a lease of their own).
    let interest: (any FamilyInterest)?
    /// Called after a sweep that dropped many members, or the last (``HostedFeeds``).
    let releaseMemory: (@Sendable () -> Void)?
    /// This instance in the records of interest (random per family and process).
    let instanceTag = RandomID.token()
    /// The shards whose lease this instance keeps, or tries to take, each renewed by its task.
    var shardLeases: [Int: (lease: SharedLease, keeper: Task<Void, Never>)] = [:]
    var shardTicker: Task<Void, Never>?
    /// ``stop()`` was called: no shard's lease is kept any more.
    var stopped = false
    /// The family-wide sources' latest changes (``follow(_:update:)``), by source in the order they were
    /// followed: applied to every live member when they come, and to each member made later.
    var familyWide: [(@Sendable (inout Model.State, String) throws -> Void)?] = []
    let live: Gauge, made: Counter, dropped: Counter, loaderErrors: Counter, refusedFull: Counter, shardsHeld: Gauge
    let loaderTime: CoreMetrics.Timer

    package init(prefix: String, model: Model, limits: FamilyLimits, truth: FamilyTruth = .kept, registry: FeedRegistry, kept: MemberStore? = nil,
                 shards: FamilyShards = FamilyShards(), clock: @escaping @Sendable () -> Double, releaseMemory: (@Sendable () -> Void)? = nil, load: @escaping @Sendable (FamilyMember<Model>) async throws -> Model.State) {
        self.prefix = prefix
        self.model = model
        self.limits = limits
        self.truth = truth
        self.registry = registry
        self.kept = kept
        self.shards = shards
        self.releaseMemory = releaseMemory
        self.interest = registry.shared as? any FamilyInterest
        self.clock = clock
        self.load = load
        self.roster = FamilyRoster(limits: limits)
        let family = [("family", prefix)]
        live = Gauge(label: FamilyMetricName.live, dimensions: family)
        made = Counter(label: FamilyMetricName.made, dimensions: family)
        dropped = Counter(label: FamilyMetricName.dropped, dimensions: family)
        loaderErrors = Counter(label: FamilyMetricName.loaderErrors, dimensions: family)
        refusedFull = Counter(label: FamilyMetricName.refusedFull, dimensions: family)
        loaderTime = CoreMetrics.Timer(label: FamilyMetricName.loaderDuration, dimensions: family)
        shardsHeld = Gauge(label: FamilyMetricName.shardsHeld, dimensions: family)
        live.record(0)
    }

    /// Starts the timer that drops idle members (a tick of a quarter of ``FamilyLimits/idle``, at
    /// most a second).
    package func start() {
        guard ticker == nil else { return }
        let tick = min(1, max(0.02, limits.idle / 4))
        ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(tick))
                await self?.expire()
            }
        }
        if interest != nil {
            shardsHeld.record(0)
            shardTicker = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: SharedLease.interval)
                    await self?.tendShards()
                }
            }
        }
    }

    /// Stops the timers, every member's sources and the shards' leases (given up: the server is
    /// shutting down).
    public func stop() {
        stopped = true
        ticker?.cancel()
        ticker = nil
        shardTicker?.cancel()
        shardTicker = nil
        for member in members.values { for source in member.sources { source.cancel() } }
        for shard in shardLeases.values { shard.keeper.cancel() }
        shardLeases = [:]
    }

    /// The lease of `key`'s shard, kept from now on (its task takes it whenever no one holds it, and
    /// renews it while held), or nil without a record of interest (``interest``).
    func shardLease(of key: String) -> SharedLease? {
        guard interest != nil, let shared = registry.shared else { return nil }
        let shard = shards.shard(of: key)
        if let kept = shardLeases[shard] { return kept.lease }
        let lease = SharedLease(name: FamilyShards.leaseName(family: prefix, shard: shard), store: shared, logger: registry.sharingLogger)
        guard !stopped else { return lease }  // made during shutdown: never held, its elements dropped
        shardLeases[shard] = (lease, Task { await lease.keep() })
        return lease
    }

    /// How many shards' leases this instance holds now (`diffstream_family_shards_held`).
    package var shardsHeldNow: Int {
        shardLeases.values.count { $0.lease.token != nil }
    }

    /// One renewal's work with a store several instances share (every ``SharedLease/interval``):
    /// records this instance's live keys, every shard in one round trip; for each shard whose lease it
    /// holds, reads the keys live on any instance and makes those not live here live (their sources
    /// run here), counting the others as used; gives up the leases of shards it no longer needs
    /// (``FamilyShards/duty(live:held:interest:)``).
    package func tendShards() async {
        guard let interest else { return }
        let live = shards.group(members.keys)
        let sets = Dictionary(uniqueKeysWithValues: live.map { shard, keys in
            (FamilyShards.interestSet(family: prefix, shard: shard), keys.map { FamilyShards.interestEntry(key: $0, instance: instanceTag) })
        })
        do { try await interest.recordInterest(sets, milliseconds: SharedLease.milliseconds) } catch {
            // The store's outage is announced by the feeds' copies (SharedFeeds); the next renewal tries again.
            registry.sharingLogger.debug("family \(prefix): the live members could not be recorded: \(error)")
        }
        let held = Set(shardLeases.filter { $0.value.lease.token != nil }.keys)
        var found: [Int: [String]] = [:]
        var unread: Set<Int> = []
        for shard in held {
            do {
                let entries = try await interest.interest(in: FamilyShards.interestSet(family: prefix, shard: shard))
                found[shard] = FamilyShards.keysLiveElsewhere(entries, instance: instanceTag)
            } catch {
                unread.insert(shard)  // kept as it is until it can be read
            }
        }
        var duty = shards.duty(live: Set(members.keys), held: held, interest: found)
        duty.keep.formUnion(unread)
        let now = clock()
        for keys in found.values {
            for key in keys where members[key] != nil { _ = roster.use(key, at: now) }  // live elsewhere too: stays here, where its sources run
        }
        for shard in Set(shardLeases.keys).subtracting(duty.keep) {
            shardLeases.removeValue(forKey: shard)?.keeper.cancel()
        }
        shardsHeld.record(shardsHeldNow)
        for key in duty.make {
            // Only a member whose feed exists: one deleted (`delete(_:)` on another instance) while live
            // elsewhere is not made again by its shard's holder.
            Task { [weak self, registry, name = feed(key)] in
                guard (try? await registry.read(name)) != nil else { return }
                _ = try? await self?.member(key)
            }
        }
    }

    /// The feed name of `key`.
    public nonisolated func feed(_ key: String) -> String { prefix + "." + key }

    /// Follows `source` once for the whole family (issue 52): each element is applied to every live
    /// member's state with `update(&state, element, key)` (each member renders and diffs its own view,
    /// and its subscribers get one batch), and the latest element is applied to every member made
    /// later: a new key, or one dropped (or kept across a restart) that comes back. So `update` must
    /// describe the shared part as it is now (the catalogue, not "one item added"), so that applying
    /// an element again changes nothing. With a store several instances share, each instance follows
    /// the source and applies an element to the live members whose shard's lease it holds (their own
    /// sources run there too, decision 0008); a member made again anywhere catches up as it is made.
    /// - Returns: the task following the source (cancel it to stop; it ends with the source).
    /// - Complexity: O(live members) per element, their renders and diffs run concurrently.
    @discardableResult
    public nonisolated func follow<Source: AsyncSequence & Sendable>(
        _ source: Source, update: @escaping @Sendable (inout Model.State, Source.Element, String) throws -> Void
    ) -> Task<Void, any Error> where Source.Element: Sendable {
        Task { [weak self] in
            guard let index = await self?.addFamilyWideSource() else { return }
            for try await element in source {
                guard let self else { return }
                await self.applyFamilyWide(index) { state, key in try update(&state, element, key) }
            }
        }
    }

    private func addFamilyWideSource() -> Int {
        familyWide.append(nil)
        return familyWide.count - 1
    }

    /// Keeps `change` as source `index`'s latest and applies it to the live members this instance
    /// drives (all of them, or with shards those whose lease it holds), all at once.
    private func applyFamilyWide(_ index: Int, _ change: @escaping @Sendable (inout Model.State, String) throws -> Void) async {
        familyWide[index] = change
        let targets = members.compactMap { key, member -> (String, ViewModelHost<Model>)? in
            guard interest == nil || shardLeases[shards.shard(of: key)]?.lease.token != nil else { return nil }
            return (key, member.host)
        }
        await withTaskGroup(of: Void.self) { group in
            for (key, host) in targets {
                group.addTask { await Self.apply(change, to: host, key: key) }
            }
        }
    }

    /// Applies every family-wide source's latest change to a member just made, in the order the
    /// sources were followed (nothing changes when it has them already).
    private func catchUpFamilyWide(_ host: ViewModelHost<Model>, key: String) async {
        for change in familyWide { if let change { await Self.apply(change, to: host, key: key) } }
    }

    /// One member's update; a refusal (an update or a render that throws, a store that refuses) leaves
    /// that member as it was, and the others go on.
    private static func apply(_ change: @escaping @Sendable (inout Model.State, String) throws -> Void, to host: ViewModelHost<Model>, key: String) async {
        _ = try? await host.update { state in try change(&state, key) }
    }

    /// The number of live members.
    public var liveCount: Int { members.count }

    /// The live member `key`, made by the loader if it is not live: a use (a read, a subscription, an
    /// action) that counts as its last.
    /// - Throws: ``ViewModelError/noSuchMember(feed:family:key:)``, ``ViewModelError/loaderFailed(feed:reason:)``,
    ///   ``ViewModelError/loaderTimedOut(feed:seconds:)``, ``ViewModelError/familyFull(feed:family:maxLive:retryAfter:)``,
    ///   or the store's refusal of the first snapshot (``ViewModelError/notPublished(_:)``).
    public func member(_ key: String) async throws(ViewModelError) -> ViewModelHost<Model> {
        switch roster.use(key, at: clock()) {
        case .live:
            if let member = members[key] { return member.host }
            throw .loaderFailed(feed: feed(key), reason: "the member was dropped while in use; try again")
        case .wait(let ticket):
            let result = await withCheckedContinuation { waiting[ticket, default: []].append($0) }
            return try result.get()
        case .full(let retryAfter):
            refusedFull.increment()
            throw .familyFull(feed: feed(key), family: prefix, maxLive: limits.maxLive, retryAfter: retryAfter)
        case .noSuchKey:
            throw .noSuchMember(feed: feed(key), family: prefix, key: key)
        case .load(let ticket, let evicting):
            if let evicting { await drop(evicting) }
            let result = await make(key)
            let outcome: FamilyRoster.LoadOutcome = switch result {
            case .success: .loaded
            case .failure(.noSuchMember): .noSuchKey
            case .failure: .failed
            }
            var answer = result
            if case .success(let made) = result { await catchUpFamilyWide(made.host, key: key) }
            if roster.finishLoad(ticket, outcome, at: clock()) {
                switch result {
                case .success(let made):
                    members[key] = made
                    self.made.increment()
                case .failure(.noSuchMember): break
                case .failure: loaderErrors.increment()
                }
            } else if case .success(let made) = result {
                // Deleted while it was being made: nothing of it is kept.
                for source in made.sources { source.cancel() }
                answer = .failure(.noSuchMember(feed: feed(key), family: prefix, key: key))
            }
            live.record(members.count)
            let answered = answer.map(\.host)
            for waiter in waiting.removeValue(forKey: ticket) ?? [] { waiter.resume(returning: answered) }
            return try answered.get()
        }
    }

    /// Runs the loader for `key` (with its timeout), publishes the first snapshot and starts the
    /// member's sources.
    private func make(_ key: String) async -> Result<(host: ViewModelHost<Model>, sources: [Task<Void, any Error>]), ViewModelError> {
        let name = feed(key)
        // With a store for members: what it kept (the feed goes on from there), and with `.kept`, the
        // state itself.
        var keptState: [UInt8]?
        if let kept {
            do {
                let stored = try kept.read(name)
                keptState = stored?.viewState
                _ = try await registry.adopt(name, restoring: stored, log: kept, replayLimit: kept.maxBatches)
            } catch {
                return .failure(.notPublished(.store(error)))
            }
        } else if registry.shared != nil {
            // With a store several instances share, the member's feed is a shared feed like any hosted
            // view model's: its state, version and history are the store's, whichever instance made or
            // changed it. The read loads this instance's copy (followed before it is read, so no commit
            // falls between), or brings the copy held up to the store (one kept since the member was
            // dropped here); the loader's render below is diffed against it.
            do {
                _ = try await registry.read(name)
                keptState = try await registry.basis(name).state
            } catch {
                return .failure(.notPublished(.store(error)))
            }
        }
        // Decoded or migrated (``HostedViewModel/stateVersion``); a kept state this program cannot read
        // is never replaced: nothing is made or written (the feed adopted above is let go, unwritten).
        var restored: Model.State?
        if let keptState {
            do { restored = try ViewModelHost<Model>.readKept(keptState, model: model, feed: name, dimension: ("family", prefix), registry: registry) } catch {
                if kept != nil { await registry.drop(name) }
                return .failure(error)
            }
        }
        let member = FamilyMember<Model>(key: key, feed: name, kept: restored)
        let remadeBy = truth == .program ? prefix : nil
        // The state made from, when it is not the loader's: with `.kept`, the state kept. Under lease
        // shards (decision 0008), also with `.program` when the member is live on another instance (its
        // key recorded there in its shard's interest): its state is the one being served, changed by
        // actions since its loader ran perhaps, and this instance takes it as it is.
        var adopted: Model.State?
        if truth == .kept, let restored {
            // Without shards, the loader does not run; with them it runs for the sources it attaches
            // (this instance may hold the key's shard: they must run here), and its render is not used.
            guard interest != nil else {
                let host = ViewModelHost(name: name, model: model, state: restored, registry: registry, remadeByLoaderOf: remadeBy)
                return .success((host, member.start(on: host, shard: nil)))
            }
            adopted = restored
        } else if let interest, let restored {
            let set = FamilyShards.interestSet(family: prefix, shard: shards.shard(of: key))
            if let entries = try? await interest.interest(in: set), FamilyShards.keysLiveElsewhere(entries, instance: instanceTag).contains(key) { adopted = restored }
        }
        let started = clock()
        let loaded = await Self.withDeadline(seconds: limits.loaderTimeout) { [load] in try await load(member) }
        loaderTime.recordSeconds(clock() - started)
        let state: Model.State
        switch loaded {
        case nil: return .failure(.loaderTimedOut(feed: name, seconds: limits.loaderTimeout))
        case .failure(let error as NoSuchMember)?: _ = error; return .failure(.noSuchMember(feed: name, family: prefix, key: key))
        case .failure(let error)?: return .failure(.loaderFailed(feed: name, reason: "\(error)"))
        case .success(let value)?: state = value
        }
        if let adopted {
            let host = ViewModelHost(name: name, model: model, state: adopted, registry: registry, remadeByLoaderOf: remadeBy)
            await recordLive(key)
            return .success((host, member.start(on: host, shard: shardLease(of: key))))
        }
        do throws(ViewModelError) {
            let snapshot = try ViewModelHost<Model>.wire(model, state)
            let bytes = registry.keepsViewState(name) ? try ViewModelHost<Model>.storedBytes(state) : nil
            do { _ = try await registry.write(name, snapshot: snapshot, viewState: bytes, hosted: true) } catch { throw .notPublished(error) }
        } catch .notPublished(let error) {
            return .failure(.notPublished(error))
        } catch {
            return .failure(.loaderFailed(feed: name, reason: error.description))
        }
        let host = ViewModelHost(name: name, model: model, state: state, registry: registry, remadeByLoaderOf: remadeBy)
        await recordLive(key)
        return .success((host, member.start(on: host, shard: shardLease(of: key))))
    }

    /// Records `key` live here now rather than at the next renewal, so that another instance making it
    /// meanwhile takes the state this one serves (``make(_:)``). Best effort: the renewal records it too.
    private func recordLive(_ key: String) async {
        guard let interest else { return }
        let set = FamilyShards.interestSet(family: prefix, shard: shards.shard(of: key))
        try? await interest.recordInterest([set: [FamilyShards.interestEntry(key: key, instance: instanceTag)]], milliseconds: SharedLease.milliseconds)
    }

    /// `body()`'s result, or nil once `seconds` have passed first (the body's task is then cancelled
    /// and its result, whenever it comes, dropped).
    package static func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async -> Result<T, any Error>? {
        let gate = OnceGate()
        return await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, any Error>?, Never>) in
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                if gate.pass() { continuation.resume(returning: result) }
            }
            // The timer goes with the answer (`pass` cancels it): left sleeping, it kept the work's task,
            // and what the loader made, for the whole timeout: about 2 KiB per member made in that time.
            gate.cancelOnPass(Task {
                try? await Task.sleep(for: .seconds(seconds))
                if gate.pass() {
                    work.cancel()
                    continuation.resume(returning: nil)
                }
            })
        }
    }

    /// A subscriber of `key`'s feed joined (the member stays while it has one).
    package func joined(_ key: String) {
        _ = roster.join(key, at: clock())
    }

    /// A subscriber of `key`'s feed left.
    package func left(_ key: String) {
        _ = roster.leave(key, at: clock())
    }

    /// Drops the members idle now.
    package func expire() async {
        let expiry = roster.expire(now: clock())
        guard !expiry.dropped.isEmpty else { return }
        for key in expiry.dropped { await drop(key) }
        if members.isEmpty { members = [:] }  // the table grew with the members: it goes with the last
        if expiry.dropped.count >= Self.dropsWorthReleasing || members.isEmpty { releaseMemory?() }
    }

    /// Drops in one sweep after which the freed memory is worth handing back (``HostedFeeds``'s
    /// `releaseMemory`), as it is after the last member's.
    static var dropsWorthReleasing: Int { 256 }

    /// Drops the live member `key` (the roster has let it go): its sources stop, its feed leaves the
    /// registry.
    private func drop(_ key: String) async {
        guard let member = members.removeValue(forKey: key) else { return }
        for source in member.sources { source.cancel() }
        await registry.drop(feed(key))
        dropped.increment()
        live.record(members.count)
    }

    /// Changes the state of member `key`, live or not (a use: it is made first if need be), as
    /// ``ViewModelHost/update(_:)`` does; for example when the program's data for that user changed.
    @discardableResult
    public nonisolated func update(_ key: String, _ body: @Sendable (inout Model.State) throws -> Void) async throws(ViewModelError) -> ChangeResult {
        let host = try await member(key)
        return try await host.update(body)
    }

    /// Deletes member `key` and what is kept of it (a user who left): its sources stop, its feed is
    /// deleted (subscribers get `event: deleted`), and the roster forgets it.
    /// - Returns: whether it had a feed.
    @discardableResult
    public func delete(_ key: String) async throws(ViewModelError) -> Bool {
        _ = roster.remove(key)
        var live = false
        if let member = members.removeValue(forKey: key) {
            for source in member.sources { source.cancel() }
            self.live.record(members.count)
            live = true
        }
        if live {
            do { return try await registry.delete(feed(key)) } catch { throw .notPublished(error) }
        }
        // Not live: what is kept of it goes (and a feed of it still held, if any).
        var existed = false
        if let kept {
            do { existed = try await kept.delete(feed(key)) } catch { throw .notPublished(.store(error)) }
        }
        do { existed = try await registry.delete(feed(key)) || existed } catch { throw .notPublished(error) }
        return existed
    }
}
