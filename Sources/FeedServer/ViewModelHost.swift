import DiffStream
import DiffStreamJSON
import Foundation

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
    let registry: FeedRegistry
    /// The current state; changed only by ``commit(_:)``.
    public private(set) var state: Model.State
    /// Why the last element of a source could not be applied, if it could not (nil once one applies).
    public private(set) var lastSourceError: ViewModelError?
    /// One change at a time, across the suspension of publishing (an actor alone would interleave).
    private var turn = FIFOTurn()

    init(name: String, model: Model, state: Model.State, registry: FeedRegistry) {
        self.name = name
        self.model = model
        self.state = state
        self.registry = registry
    }

    /// The wire form of a typed snapshot: the single conversion point between a view model's typed
    /// sections and items and what travels.
    static func wire(_ model: Model, _ state: Model.State) throws(ViewModelError) -> WireSnapshot {
        do {
            return try model.render(state).wireSnapshot()
        } catch {
            throw .renderFailed("\(error)")
        }
    }

    /// The state as the JSON bytes a durable store keeps (keys sorted, so equal states are equal bytes).
    static func storedBytes(_ state: Model.State) throws(ViewModelError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do { return Array(try encoder.encode(state)) } catch {
            throw .stateNotEncodable("\(error)")
        }
    }

    /// Renders `next`, publishes the difference with `next` as the stored state, and keeps `next`.
    /// This is the one place a hosted view model's state changes (the caller holds the turn). If the
    /// render throws or the store refuses, nothing is published and the previous state stays.
    private func commit(_ next: Model.State) async throws(ViewModelError) -> ChangeResult {
        let snapshot = try Self.wire(model, next)
        let bytes = try Self.storedBytes(next)
        let published: (created: Bool, version: Int, operations: Int)
        do { published = try await registry.put(name, snapshot: snapshot, viewState: bytes, hosted: true) } catch { throw .notPublished(error) }
        state = next
        return ChangeResult(version: published.version, operations: published.operations)
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
        await takeTurn()
        defer { passTurn() }
        var next = state
        do {
            try body(&next)
        } catch let error as ViewModelError {
            throw error
        } catch let error as InvalidInput {
            throw .invalidField(field: error.field, reason: error.reason)
        } catch {
            throw .changeRefused("\(error)")
        }
        return try await commit(next)
    }

    /// Runs an action by name with the request body as its input.
    /// - Throws: ``ViewModelError/unknownAction(feed:action:)`` for a name the view model does not
    ///   declare, or what ``update(_:)`` throws; nothing changed then.
    public func perform(_ actionName: String, body: [UInt8]) async throws(ViewModelError) -> ChangeResult {
        guard let action = model.actions.first(where: { $0.name == actionName }) else {
            throw .unknownAction(feed: name, action: actionName)
        }
        return try await update { state in try action.perform(&state, body) }
    }

    /// Merges a partial state (RFC 7396) into the current one, then validates and commits it.
    /// - Throws: ``ViewModelError``; nothing changed then.
    public func patch(body: [UInt8]) async throws(ViewModelError) -> ChangeResult {
        let patch: JSONValue
        do { patch = try JSONParser.parse(body) } catch { throw .malformedJSON(error.description) }
        guard case .object = patch else {
            throw .invalidBody("the body must be a JSON object holding part of the state")
        }
        let model = model
        return try await update { state in
            let merged = ActionInput.merge(patch, into: try ActionInput.encode(state))
            let next = try ActionInput.decode(Model.State.self, from: merged)
            if let field = ActionInput.unknownField(in: patch, decoded: try ActionInput.encode(next)) {
                throw ViewModelError.invalidField(field: field, reason: "unknown field")
            }
            try model.validate(next)
            state = next
        }
    }

    /// Applies one element of a source to the state and commits it.
    func apply<Element>(_ element: Element, _ change: @Sendable (inout Model.State, Element) throws -> Void) async {
        do {
            try await update { state in try change(&state, element) }
            lastSourceError = nil
        } catch {
            lastSourceError = error
        }
    }

    /// Drives the view model from an asynchronous sequence, for example a service that emits readings:
    /// each element updates the state, which re-renders and publishes one batch if the snapshot changed.
    /// An element whose update or render throws changes nothing. Cancel the task to stop following.
    @discardableResult
    public nonisolated func follow<Source: AsyncSequence & Sendable>(
        _ source: Source, update: @escaping @Sendable (inout Model.State, Source.Element) throws -> Void
    ) -> Task<Void, any Error> where Source.Element: Sendable {
        Task {
            for try await element in source {
                await self.apply(element, update)
            }
        }
    }
}

/// A hosted feed, whatever its view model's type: what the HTTP API needs.
protocol HostedFeed: Sendable {
    var name: String { get }
    var actionList: [ActionDescription] { get }
    var acceptsPatch: Bool { get }
    func perform(_ actionName: String, body: [UInt8]) async throws(ViewModelError) -> ChangeResult
    func patch(body: [UInt8]) async throws(ViewModelError) -> ChangeResult
}

/// An action as `GET /feeds` lists it.
struct ActionDescription: Sendable {
    var name: String
    var fields: [ActionField]
    var isPublic: Bool
}

extension ViewModelHost: HostedFeed {
    nonisolated var actionList: [ActionDescription] {
        model.actions.map { ActionDescription(name: $0.name, fields: $0.fields, isPublic: $0.isPublic) }
    }
    nonisolated var acceptsPatch: Bool { model.acceptsPatch }
}
