import FeedCore
import FeedReplication
import DiffStream
import DiffStreamJSON
import Foundation
import Synchronization

/// What a change did to a hosted feed: the version it left the feed at and the size of its batch
/// (`0` when the snapshot came out the same, and then no new version).
public struct ChangeResult: Sendable, Equatable {
    public var version: Int
    public var operations: Int

    public init(version: Int, operations: Int) {
        self.version = version
        self.operations = operations
    }
}

/// The one owner of a hosted view model's state.
///
/// Its actions, patches and source elements run one at a time, first come first served: each takes
/// the current state, changes a copy, renders it, and publishes the difference from the feed's
/// snapshot as one batch (nothing if the snapshot is the same) together with the new state (stored
/// with it when there is a durable store). Only then does the copy become the state. So a change's
/// answer carries the version that change produced, and no change is lost to another running at the
/// same time.
public actor ViewModelHost<Model: HostedViewModel> {
    public nonisolated let name: String
    public nonisolated let model: Model
    package let registry: FeedRegistry
    /// The current state; changed only by ``commit(_:)``.
    public private(set) var state: Model.State
    /// Why the last element of a source could not be applied, if it could not (nil once one applies).
    public private(set) var lastSourceError: ViewModelError?
    /// One change at a time, across the suspension of publishing (an actor alone would interleave).
    private var turn = FIFOTurn()
    /// With a shared store (several instances host this view model), the version and stored state
    /// ``state`` was decoded from; a change is committed only if the store still holds them, else
    /// it runs again on the state the store holds. Nil: not known yet (read it first).
    private var basis: FeedBasis?
    /// The family whose loader makes this member again (``FamilyTruth/program``): a `PATCH` would be
    /// undone then, so it is refused. Nil for a feed hosted on its own and a ``FamilyTruth/kept`` member.
    private let remadeByLoaderOf: String?
    /// Why the state kept with the feed cannot be read by this program (``readKept(_:model:feed:dimension:registry:)``),
    /// while it cannot: every change and every use (``checkKeptState()``) is refused with it, and nothing
    /// is written until it is read or reset (``resetKeptState()``). Nil: the state is this host's.
    private let unreadable: Mutex<ViewModelError?>
    /// Hosted on its own (``HostedFeeds/host(_:as:state:)``), not as a family's member.
    private let hostedAlone: Bool
    /// What ``readKept(_:model:feed:dimension:registry:)`` counts this feed's unreadable kept states under:
    /// the feed hosted on its own, else its family, never a member.
    private nonisolated var keptDimension: (String, String) {
        if hostedAlone { return ("feed", name) }
        return ("family", remadeByLoaderOf ?? registry.metrics.familyPrefix(of: name) ?? String(name.prefix { $0 != "." }))
    }

    package init(name: String, model: Model, state: Model.State, registry: FeedRegistry, remadeByLoaderOf family: String? = nil,
                 hostedAlone: Bool = false, unreadable: ViewModelError? = nil) {
        self.name = name
        self.model = model
        self.state = state
        self.registry = registry
        self.remadeByLoaderOf = family
        self.hostedAlone = hostedAlone
        self.unreadable = Mutex(unreadable)
    }

    /// The wire form of a typed snapshot: the single conversion point between a view model's typed
    /// sections and items and what travels.
    package static func wire(_ model: Model, _ state: Model.State) throws(ViewModelError) -> WireSnapshot {
        do {
            return try model.render(state).wireSnapshot()
        } catch {
            throw .renderFailed("\(error)")
        }
    }

    /// The state as the JSON bytes a durable store keeps (keys sorted, so equal states are equal bytes).
    /// From ``HostedViewModel/stateVersion`` 2 on, with the version beside the fields (``KeptState``).
    package static func storedBytes(_ state: Model.State) throws(ViewModelError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let bytes: [UInt8]
        do { bytes = Array(try encoder.encode(state)) } catch {
            throw .stateNotEncodable("\(error)")
        }
        return try KeptState.stamp(bytes, version: Model.stateVersion)
    }

    /// Renders `next`, publishes the difference with `next` as the stored state, and keeps `next`.
    /// This is the one place a hosted view model's state changes (the caller holds the turn). If the
    /// render throws or the store refuses, nothing is published and the previous state stays.
    private func commit(_ next: Model.State, options: FeedWriteOptions) async throws(ViewModelError) -> FeedWriteResult {
        let snapshot = try Self.wire(model, next)
        // Encoded only where the feed keeps it: in memory, this host's `state` is the only copy needed.
        let bytes = registry.keepsViewState(name) ? try Self.storedBytes(next) : nil
        let published: FeedWriteResult
        do { published = try await registry.write(name, snapshot: snapshot, viewState: bytes, hosted: true, options: options) } catch { throw .notPublished(error) }
        if published.replayed {
            basis = nil  // the first attempt's answer: nothing was written now; read the state again next time
        } else {
            state = next
            if registry.shared != nil { basis = FeedBasis(version: published.version, state: bytes) }
        }
        return published
    }

    /// With a shared store: makes ``state`` the one the store holds, when another instance changed it.
    private func catchUp() async throws(ViewModelError) -> FeedBasis? {
        guard registry.shared != nil else { return nil }
        let current: FeedBasis
        do { current = try await registry.basis(name) } catch { throw .notPublished(.store(error)) }
        if current != basis {
            // A state this program cannot read (another program's, during a rolling upgrade) is never
            // taken over: the change is refused, and the basis stays, so the next one reads it again.
            if let bytes = current.state {
                do { state = try Self.readKept(bytes, model: model, feed: name, dimension: keptDimension, registry: registry) } catch {
                    unreadable.withLock { $0 = error }
                    throw error
                }
            }
            unreadable.withLock { $0 = nil }
            basis = current
        }
        return current
    }

    /// Refuses a use of the feed while the state kept with it cannot be read (with a shared store, once
    /// it is read again: another instance may have migrated or reset it). Nothing when it is readable.
    /// - Throws: ``ViewModelError/keptStateUnreadable(feed:reason:)``.
    package nonisolated func checkKeptState() async throws(ViewModelError) {
        guard unreadable.withLock({ $0 }) != nil else { return }
        try await readKeptAgain()
    }

    private func readKeptAgain() async throws(ViewModelError) {
        await takeTurn()
        defer { passTurn() }
        if registry.shared == nil {
            if let error = unreadable.withLock({ $0 }) { throw error }
            return
        }
        _ = try await catchUp()
    }

    /// Discards the state kept with the feed, readable or not, and starts it again from the view model's
    /// ``HostedViewModel/initialState``: published as one batch (the difference from the feed's snapshot)
    /// with the new state, in turn with every other change. An operator's deliberate act
    /// (`DELETE /feeds/{feed}?reset=kept-state`).
    /// - Throws: ``ViewModelError``: the render or the store's refusal; nothing changed then.
    @discardableResult
    package func resetKeptState() async throws(ViewModelError) -> FeedWriteResult {
        await takeTurn()
        defer { passTurn() }
        for _ in 0..<SharedFeedCopy.maxAttempts {
            var options = FeedWriteOptions()
            if registry.shared != nil {
                // On whatever the store holds now, read or not: it is what is replaced.
                do { options.basis = try await registry.basis(name) } catch { throw .notPublished(.store(error)) }
            }
            do {
                let result = try await commit(model.initialState, options: options)
                unreadable.withLock { $0 = nil }
                return result
            } catch .notPublished(.conflict) where options.basis != nil {
                continue
            }
        }
        throw .notPublished(.conflict)
    }

    /// With a shared store, after a change was refused on the copy's state: whether the store holds
    /// another state (a change on another instance whose message is still on the way), now read into
    /// the copy.
    private func storeMovedOn() async -> Bool {
        let used = basis
        _ = try? await registry.read(name)
        guard let now = try? await registry.basis(name) else { return false }
        return now != used
    }

    /// What a change's refusal is to the client: an ``InvalidInput`` is an invalid field, a
    /// ``ViewModelError`` stays as it is, and any other error is ``ViewModelError/changeRefused(_:)``.
    private static func refusal(_ error: any Error) -> ViewModelError {
        switch error {
        case let error as ViewModelError: error
        case let error as InvalidInput: .invalidField(field: error.field, reason: error.reason)
        default: .changeRefused("\(error)")
        }
    }

    private func takeTurn() async {
        if !turn.tryTake() { await withCheckedContinuation { turn.enqueue($0) } }
    }

    private func passTurn() {
        turn.pass()
    }

    /// Changes the state with `body` (on a copy) and commits it, in turn with every other change.
    /// An ``InvalidInput`` thrown by `body` becomes ``ViewModelError/invalidField(field:reason:)``, a
    /// ``ViewModelError`` stays as it is, and any other error is ``ViewModelError/changeRefused(_:)``.
    /// - Throws: ``ViewModelError``; nothing changed then.
    @discardableResult
    public func update(_ body: (inout Model.State) throws -> Void) async throws(ViewModelError) -> ChangeResult {
        let result = try await update(options: FeedWriteOptions(), body)
        return ChangeResult(version: result.version, operations: result.operations)
    }

    /// ``update(_:)`` with a write id (a client's `Idempotency-Key`) or a lease's fencing token. With
    /// a shared store the change runs on the state the store holds and commits only if no other
    /// instance changed it meanwhile; else it runs again on the new state (bounded).
    package func update(options: FeedWriteOptions, _ body: (inout Model.State) throws -> Void) async throws(ViewModelError) -> FeedWriteResult {
        await takeTurn()
        defer { passTurn() }
        if let key = options.writeID {
            // A client's retry: the first answer, before the change runs again on today's state (where
            // it may no longer apply, or apply twice).
            let previous: FeedWriteResult?
            do { previous = try await registry.committedAnswer(name, writeID: key, request: options.request ?? "") } catch { throw .notPublished(error) }
            if let previous { return previous }
        }
        var refused: ViewModelError?
        for _ in 0..<SharedFeedCopy.maxAttempts {
            if registry.shared == nil, let error = unreadable.withLock({ $0 }) { throw error }
            var options = options
            options.basis = try await catchUp()
            var next = state
            do {
                try body(&next)
            } catch {
                // Refused on this instance's copy of the state: with a shared store, another instance's
                // change may not have arrived yet; run again on the state the store holds.
                refused = Self.refusal(error)
                if registry.shared != nil, await storeMovedOn() { continue }
                throw Self.refusal(error)
            }
            refused = nil
            do {
                return try await commit(next, options: options)
            } catch .notPublished(.conflict) where options.basis != nil {
                continue  // another instance changed the state first: run again on its state
            }
        }
        throw refused ?? .notPublished(.conflict)
    }

    /// Runs an action by name with the request body as its input.
    /// - Throws: ``ViewModelError/unknownAction(feed:action:)`` for a name the view model does not
    ///   declare, or what ``update(_:)`` throws; nothing changed then.
    public func perform(_ actionName: String, body: [UInt8]) async throws(ViewModelError) -> ChangeResult {
        let result = try await perform(actionName, body: body, writeID: nil)
        return ChangeResult(version: result.version, operations: result.operations)
    }

    /// ``perform(_:body:)`` with a client's `Idempotency-Key`: with a shared store, a retry gets the
    /// first answer (``FeedWriteResult/replayed``) and changes nothing; the same key sent with another
    /// action or body is refused (``FeedWriteError/idempotencyKeyReused``).
    public func perform(_ actionName: String, body: [UInt8], writeID: String?) async throws(ViewModelError) -> FeedWriteResult {
        guard turn.waitingCount < Feed.maxQueuedWrites else { throw .notPublished(.busy(limit: Feed.maxQueuedWrites)) }
        guard let action = model.actions.first(where: { $0.name == actionName }) else {
            throw .unknownAction(feed: name, action: actionName)
        }
        return try await update(options: FeedWriteOptions(writeID: writeID, request: RequestDigest.of("POST \(actionName)", body))) { state in try action.perform(&state, body) }
    }

    /// Merges a partial state (RFC 7396) into the current one, then validates and commits it.
    /// - Throws: ``ViewModelError``; nothing changed then.
    public func patch(body: [UInt8]) async throws(ViewModelError) -> ChangeResult {
        let result = try await patch(body: body, writeID: nil)
        return ChangeResult(version: result.version, operations: result.operations)
    }

    /// ``patch(body:)`` with a client's `Idempotency-Key` (as ``perform(_:body:writeID:)``).
    public func patch(body: [UInt8], writeID: String?) async throws(ViewModelError) -> FeedWriteResult {
        guard turn.waitingCount < Feed.maxQueuedWrites else { throw .notPublished(.busy(limit: Feed.maxQueuedWrites)) }
        guard model.acceptsPatch else { throw .patchNotAccepted(feed: name) }
        if let family = remadeByLoaderOf { throw .patchUndoneByLoader(feed: name, family: family) }
        let patch: JSONValue
        do { patch = try JSONParser.parse(body) } catch { throw .malformedJSON(error.description) }
        guard case .object = patch else {
            throw .invalidBody("the body must be a JSON object holding part of the state")
        }
        let model = model
        return try await update(options: FeedWriteOptions(writeID: writeID, request: RequestDigest.of("PATCH", body))) { state in
            let merged = ActionInput.merge(patch, into: try ActionInput.encode(state))
            let next = try ActionInput.decode(Model.State.self, from: merged)
            if let field = ActionInput.unknownField(in: patch, decoded: try ActionInput.encode(next)) {
                throw ViewModelError.invalidField(field: field, reason: "unknown field")
            }
            try model.validate(next)
            state = next
        }
    }

    /// Applies one element of a source to the state and commits it (with the lease's fencing token,
    /// when the source runs under one).
    /// - Returns: false when the lease was lost (another instance holds it): stop the source.
    package func apply<Element>(_ element: Element, fence: String? = nil, _ change: @Sendable (inout Model.State, Element) throws -> Void) async -> Bool {
        do {
            _ = try await update(options: FeedWriteOptions(fence: fence)) { state in try change(&state, element) }
            lastSourceError = nil
        } catch .notPublished(.fenced) {
            return false
        } catch {
            lastSourceError = error
        }
        return true
    }

    /// Drives the view model from an asynchronous sequence, for example a service that emits readings:
    /// each element updates the state, which re-renders and publishes one batch if the snapshot changed.
    /// An element whose update or render throws changes nothing. Cancel the task to stop following.
    ///
    /// With a shared store (several instances host this view model), the source's elements are
    /// applied on one instance at a time: the one holding the feed's lease (``SharedLease``), renewed
    /// every second. Every other instance reads the source and drops its elements (a source such as an
    /// `AsyncStream` produces whether read or not, and would pile up unread), ready to take the lease
    /// over within about ``SharedLease/milliseconds`` of the holder's end; a holder that lost it (a
    /// pause past the lease) has its commits refused by their fencing token.
    @discardableResult
    public nonisolated func follow<Source: AsyncSequence & Sendable>(
        _ source: Source, update: @escaping @Sendable (inout Model.State, Source.Element) throws -> Void
    ) -> Task<Void, any Error> where Source.Element: Sendable {
        guard let shared = registry.shared else {
            return Task {
                for try await element in source {
                    _ = await self.apply(element, update)
                }
            }
        }
        let lease = SharedLease(name: name, store: shared, logger: registry.sharingLogger)
        return Task {
            let keeper = Task { await lease.keep() }
            defer { keeper.cancel() }
            try await withTaskCancellationHandler {
                try await self.apply(source, under: lease, update)
            } onCancel: {
                keeper.cancel()
            }
        }
    }

    /// ``follow(_:update:)`` under a lease kept by someone else (a family's shard, decision 0008): the
    /// elements are applied, with its fencing token, only while `lease` is held; the others are read
    /// and dropped.
    package nonisolated func follow<Source: AsyncSequence & Sendable>(
        _ source: Source, under lease: SharedLease, update: @escaping @Sendable (inout Model.State, Source.Element) throws -> Void
    ) -> Task<Void, any Error> where Source.Element: Sendable {
        Task { try await self.apply(source, under: lease, update) }
    }

    private nonisolated func apply<Source: AsyncSequence & Sendable>(
        _ source: Source, under lease: SharedLease, _ update: @escaping @Sendable (inout Model.State, Source.Element) throws -> Void
    ) async throws where Source.Element: Sendable {
        for try await element in source {
            guard let token = lease.token else { continue }  // another instance applies it
            if await !self.apply(element, fence: token, update) { lease.lost(token) }
        }
    }
}

/// A hosted feed, whatever its view model's type: what the HTTP API needs.
package protocol HostedFeed: Sendable {
    var name: String { get }
    var actionList: [ActionDescription] { get }
    var acceptsPatch: Bool { get }
    /// Whether it has a presence feed (``HostedViewModel/presence``).
    var presence: HostedPresence { get }
    func perform(_ actionName: String, body: [UInt8], writeID: String?) async throws(ViewModelError) -> FeedWriteResult
    func patch(body: [UInt8], writeID: String?) async throws(ViewModelError) -> FeedWriteResult
    /// Refuses a use while the state kept with the feed cannot be read (``ViewModelError/keptStateUnreadable(feed:reason:)``).
    func checkKeptState() async throws(ViewModelError)
}

extension HostedFeed {
    package func checkKeptState() async throws(ViewModelError) {}
}

/// An action as `GET /feeds` lists it.
package struct ActionDescription: Sendable {
    package var name: String
    package var fields: [ActionField]
    package var isPublic: Bool
}

extension ViewModelHost: HostedFeed {
    package nonisolated var actionList: [ActionDescription] {
        model.actions.map { ActionDescription(name: $0.name, fields: $0.fields, isPublic: $0.isPublic) }
    }
    package nonisolated var acceptsPatch: Bool { model.acceptsPatch }
    package nonisolated var presence: HostedPresence { model.presence }
}
