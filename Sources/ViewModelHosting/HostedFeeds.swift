import FeedCore
import DiffStreamJSON
import FeedStorage
import Synchronization
import Timekeeping

/// Why a view model could not be hosted.
public struct HostingError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// The hosted view models, by feed name: `try await feeds.host(TodoViewModel(), as: "todo")`.
///
/// Hosted feeds are listed by `GET /feeds` with their actions, take `PATCH` (if the view model accepts
/// one) and `POST /feeds/{feed}/actions/{action}`, and refuse `PUT` and `DELETE` with `409`.
public final class HostedFeeds: Sendable {
    /// What is hosted, behind one lock; never held across an `await` or a call out of this type.
    private struct Table {
        var hosts: [String: any HostedFeed] = [:]
        var reserved: Set<String> = []
        var families: [String: any HostedFamily] = [:]
        /// The families' prefixes, kept beside them: every route check asks (``isHosted(_:)``).
        var familyPrefixes: Set<String> = []
    }

    private let table = Mutex(Table())
    public let registry: FeedRegistry
    /// Where families keep their members while dropped and across restarts (nil: in memory only).
    public let members: MemberStore?
    /// Called after a family's idle sweep dropped many members, or its last (the server returns the
    /// freed heap to the system here: the allocator keeps freed pages otherwise).
    let releaseMemory: (@Sendable () -> Void)?

    /// - Parameters:
    ///   - members: where families keep their members (`--data`: `members.sqlite3` beside the log); nil
    ///     keeps them in memory only, so a member made again starts a new history.
    ///   - releaseMemory: called after a family's idle sweep dropped many members, or its last.
    public init(registry: FeedRegistry, members: MemberStore? = nil, releaseMemory: (@Sendable () -> Void)? = nil) {
        self.registry = registry
        self.members = members
        self.releaseMemory = releaseMemory
    }

    /// Hosts `model` as the feed `name`. It starts from `state` if given; else from the state a
    /// durable store kept with the feed, decoded or migrated (``HostedViewModel/stateVersion``,
    /// ``HostedViewModel/migrate(from:_:)``); else from the model's initial state. Throws if the name is
    /// not a valid feed id or is hosted already, if the first render throws, or if the store refuses the
    /// first snapshot. A feed of that name that is not hosted (say, restored from the store after a `PUT`)
    /// is taken over.
    ///
    /// A kept state that can be neither decoded nor migrated is never replaced: the feed is hosted but
    /// left as it is, and every request to it answers ``ViewModelError/keptStateUnreadable(feed:reason:)``
    /// (`500`) until a program reads it or it is reset (``resetKeptState(_:)``).
    @discardableResult
    public func host<Model: HostedViewModel>(_ model: Model, as name: String, state: Model.State? = nil) async throws(HostingError) -> ViewModelHost<Model> {
        guard FeedID.isValid(name) else { throw HostingError(description: "'\(name)' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)") }
        guard Model.stateVersion >= 1 else { throw HostingError(description: "'\(name)': stateVersion must be 1 or more, not \(Model.stateVersion)") }
        let taken = table.withLock { table -> Bool in
            if table.reserved.contains(name) { return true }
            table.reserved.insert(name)
            return false
        }
        guard !taken else { throw HostingError(description: "a view model is already hosted as '\(name)'") }
        if registry.shared != nil {
            // Several instances host it: start from the state the store holds (unless `state` is
            // given), committed only if no other instance changed it meanwhile.
            let host = ViewModelHost(name: name, model: model, state: state ?? model.initialState, registry: registry, hostedAlone: true)
            do {
                _ = try await host.update(options: FeedWriteOptions()) { current in if let state { current = state } }
            } catch .keptStateUnreadable {
                // Left as it is: hosted, refusing every request until it is read or reset.
            } catch {
                table.withLock { _ = $0.reserved.remove(name) }
                throw HostingError(description: "'\(name)': \(error.description)")
            }
            table.withLock { $0.hosts[name] = host }
            return host
        }
        var start = state ?? model.initialState
        if state == nil, let bytes = await (try? await registry.read(name))?.viewState {
            do {
                start = try ViewModelHost<Model>.readKept(bytes, model: model, feed: name, dimension: ("feed", name), registry: registry)
            } catch {
                // Never replaced: nothing is written, and the host refuses every request until it is reset.
                let host = ViewModelHost(name: name, model: model, state: model.initialState, registry: registry, hostedAlone: true, unreadable: error)
                table.withLock { $0.hosts[name] = host }
                return host
            }
        }
        do throws(ViewModelError) {
            let snapshot = try ViewModelHost<Model>.wire(model, start)
            let bytes = registry.keepsViewState(name) ? try ViewModelHost<Model>.storedBytes(start) : nil
            do { _ = try await registry.write(name, snapshot: snapshot, viewState: bytes, hosted: true) } catch { throw .notPublished(error) }
        } catch {
            table.withLock { _ = $0.reserved.remove(name) }
            throw HostingError(description: "'\(name)': \(error.description)")
        }
        let host = ViewModelHost(name: name, model: model, state: start, registry: registry, hostedAlone: true)
        table.withLock { $0.hosts[name] = host }
        return host
    }

    /// Hosts `model` as a family of feeds (issue 38): `prefix.KEY` for every key, one instance each,
    /// made by `load` on first use (after the request is authorized) and dropped when idle, within
    /// `limits` (``ViewModelFamily``, decision 0007).
    ///
    /// `try await feeds.host(family: "home", HomeViewModel()) { member in try await state(for: member.key) }`
    /// serves `home.alice`, `home.bob`, … A feed named `prefix` itself is another feed (it may be hosted
    /// beside the family).
    /// - Throws: when the prefix is not a valid feed id of at most 29 characters, a family of that prefix
    ///   is hosted already, or `limits` are not usable.
    @discardableResult
    /// - Parameter truth: whether the state kept (``FamilyTruth/kept``, the default: what clients wrote
    ///   comes back) or the loader's render (``FamilyTruth/program``, which refuses `PATCH`) makes a
    ///   member again.
    /// - Parameter shards: with a store several instances share, the lease shards of the keys: a key's
    ///   sources run on the instance holding its shard's lease (decision 0008).
    public func host<Model: HostedViewModel>(family prefix: String, _ model: Model, limits: FamilyLimits = FamilyLimits(), truth: FamilyTruth = .kept,
                                             shards: FamilyShards = FamilyShards(),
                                             load: @escaping @Sendable (FamilyMember<Model>) async throws -> Model.State) async throws(HostingError) -> ViewModelFamily<Model> {
        if let problem = FamilyMemberName.prefixProblem(prefix) { throw HostingError(description: problem) }
        guard Model.stateVersion >= 1 else { throw HostingError(description: "family '\(prefix)': stateVersion must be 1 or more, not \(Model.stateVersion)") }
        if let problem = limits.problem { throw HostingError(description: "family '\(prefix)': \(problem)") }
        if members != nil, registry.shared != nil { throw HostingError(description: "family '\(prefix)': a store for members and a shared store together") }
        let family = ViewModelFamily(prefix: prefix, model: model, limits: limits, truth: truth, registry: registry, kept: members, shards: shards,
                                     clock: MonotonicClock.now, releaseMemory: releaseMemory, load: load)
        let taken = table.withLock { table -> Bool in
            if table.families[prefix] != nil { return true }
            table.families[prefix] = family
            table.familyPrefixes.insert(prefix)
            return false
        }
        guard !taken else { throw HostingError(description: "a family is already hosted as '\(prefix)'") }
        // Members are counted under their family in /metrics, never one series each (issue 52).
        registry.metrics.countMembers(of: self)
        await family.start()
        return family
    }

    /// The family `name` is a member of, with its key (nil: not a family member).
    /// - Complexity: O(1) for a name without a dot (most writes: every route check asks), else a set
    ///   lookup per dot of the name.
    package func family(of name: String) -> (family: any HostedFamily, key: String)? {
        let dot = UInt8(ascii: ".")  // asked on every PUT: over the contiguous bytes, not the view's iterator
        guard name.utf8.withContiguousStorageIfAvailable({ $0.contains(dot) }) ?? name.utf8.contains(dot) else { return nil }
        return table.withLock { table in
            guard !table.families.isEmpty, let member = FamilyMemberName(parsing: name, prefixes: table.familyPrefixes),
                  let family = table.families[member.prefix] else { return nil }
            return (family, member.key)
        }
    }

    /// The hosted families, by prefix.
    package var hostedFamilies: [any HostedFamily] {
        table.withLock { table in table.families.keys.sorted().compactMap { table.families[$0] } }
    }

    /// Makes the family member `name` live if it is one (a use); nothing for any other feed, but a hosted
    /// one whose kept state cannot be read refuses.
    /// - Throws: the family's refusal (no such key, loader failed or timed out, family full), or
    ///   ``ViewModelError/keptStateUnreadable(feed:reason:)``.
    package func prepare(_ name: String) async throws(ViewModelError) {
        if let host = table.withLock({ $0.hosts[name] }) { return try await host.checkKeptState() }
        guard let (family, key) = family(of: name) else { return }
        try await family.use(key).checkKeptState()
    }

    /// Discards the state kept for the hosted feed or family member `name`, readable or not (an
    /// operator's deliberate act: `DELETE /feeds/{feed}?reset=kept-state`). A hosted feed starts again
    /// from its view model's initial state (one batch); a member is deleted with what is kept of it
    /// (``ViewModelFamily/delete(_:)``: its subscribers get `event: deleted`), and its next use makes it
    /// afresh with its loader.
    /// - Returns: false when `name` is neither.
    package func resetKeptState(_ name: String) async throws(ViewModelError) -> Bool {
        if let host = table.withLock({ $0.hosts[name] }) {
            guard let host = host as? any KeptStateResetting else { return false }
            try await host.resetKeptState(key: nil)
            return true
        }
        guard let (family, key) = family(of: name), let family = family as? any KeptStateResetting else { return false }
        try await family.resetKeptState(key: key)
        return true
    }

    /// A stream subscribed to `name`: a family member stays live while it has one.
    package func joined(_ name: String) async {
        guard let (family, key) = family(of: name) else { return }
        await family.joined(key)
    }

    /// A stream of `name` ended.
    package func left(_ name: String) async {
        guard let (family, key) = family(of: name) else { return }
        await family.left(key)
    }

    /// Stops every family's timer and its members' sources (shutdown).
    package func stopFamilies() async {
        for family in hostedFamilies { await family.stop() }
    }

    /// Whether `name` is a hosted feed (or is being set up as one), or a member of a hosted family.
    public func isHosted(_ name: String) -> Bool {
        table.withLock { $0.reserved.contains(name) } || family(of: name) != nil
    }

    /// Whether the hosted feed `feed` has an action `action` declared public. False for anything unknown.
    public func isPublic(action: String, feed: String) -> Bool {
        guard let host = hosted(feed) else { return false }
        return host.actionList.contains { $0.name == action && $0.isPublic }
    }

    /// The names of the hosted feeds, sorted.
    public var names: [String] {
        table.withLock { $0.hosts.keys.sorted() }
    }

    /// The hosted feed `name`: a view model hosted under that name, or a family member (made when one
    /// of its actions or a `PATCH` is taken).
    package func hosted(_ name: String) -> (any HostedFeed)? {
        if let host = table.withLock({ $0.hosts[name] }) { return host }
        guard let (family, key) = family(of: name) else { return nil }
        return FamilyMemberFeed(name: name, key: key, family: family)
    }
}

extension HostedFeeds: FeedFamilies {
    /// The prefix of the family `name` is a member of (``family(of:)``), for the metrics.
    package func familyPrefix(of name: String) -> String? { family(of: name)?.family.prefix }
}
