import DiffStream
import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import Foundation

/// Drives a hosted view model in a unit test, with no server, no sockets and no store: perform its
/// actions and PATCHes, send it a source's elements, and read back the screen, the batch each step
/// published, and what the API would answer.
///
/// The view model is hosted exactly as the server hosts it (``HostedFeeds/host(_:as:state:)`` on a
/// ``FeedRegistry`` kept in memory), and each step goes through the same ``ViewModelHost`` entry
/// point the HTTP API or a followed source uses. Refused input throws the ``ViewModelError`` that the
/// API answers with (`422` for a refused field), and ``response(toAction:json:)`` gives that answer's
/// status and JSON body, from the API's own mapping.
///
/// ```swift
/// import DiffStreamTesting
/// import Testing
///
/// @Test func addingATodo() async throws {
///     let todos = try await ViewModelHarness(TodoViewModel())
///     let step = try await todos.perform("add", ["title": "milk"])
///     #expect(step.batch.debugString == #"insert todo t1 {"done":false,"title":"milk"} into todo at end"#)
///     #expect(await todos.snapshot.debugString == """
///         todo {"title":"To do"}: [todo t1 {"done":false,"title":"milk"}]
///         done {"title":"Done"}: []
///         """)
///     await #expect(throws: ViewModelError.invalidField(field: "title", reason: "expected 1 to 200 characters, not 0")) {
///         try await todos.perform("add", ["title": ""])
///     }
///     #expect(await todos.response(toAction: "add", json: #"{"title":""}"#).status == 422)
/// }
/// ```
///
/// Await one step before starting the next: a step's batch is the difference between the screens
/// before and after it (the same diff the feed publishes), so steps run at the same time would
/// blur into each other.
public final class ViewModelHarness<Model: HostedViewModel>: Sendable {
    /// What one step did: the version it left the feed at, the batch it published (empty, and no new
    /// version, when the screen came out the same), and the screen after it.
    public struct Step: Sendable {
        /// The feed's version after the step.
        public var version: Int
        /// The batch the step published; `batch.debugString` is one operation per line.
        public var batch: WireBatch
        /// The screen after the step; `snapshot.debugString` is one section per line.
        public var snapshot: WireSnapshot
    }

    /// What the HTTP API would answer: the status code and the body as text (JSON, with its final
    /// newline).
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var body: String

        public init(status: Int, body: String) {
            self.status = status
            self.body = body
        }
    }

    /// Elements of one source, applied with the update the view model is hosted with: the same
    /// path as ``ViewModelHost/follow(_:update:)``.
    public struct Source<Element: Sendable>: Sendable {
        let harness: ViewModelHarness
        let update: @Sendable (inout Model.State, Element) throws -> Void

        /// Applies one element as a followed source would, and returns what it did.
        /// - Throws: why the element changed nothing (``ViewModelHost/lastSourceError``).
        @discardableResult
        public func send(_ element: Element) async throws(ViewModelError) -> Step {
            let before = await harness.snapshot
            let one = AsyncStream<Element> { continuation in
                continuation.yield(element)
                continuation.finish()
            }
            _ = await harness.host.follow(one, update: update).result
            if let error = await harness.host.lastSourceError { throw error }
            return await harness.step(from: before)
        }
    }

    /// The feed's name.
    public let name: String
    /// The host, for what the harness does not wrap (`follow` a whole sequence, say).
    public let host: ViewModelHost<Model>
    /// The registry the view model is hosted on: in memory, with no transport and no store.
    public let registry: FeedRegistry

    /// Hosts `model` from `state` (else its initial state) as the feed `name`.
    /// - Throws: what hosting throws: the first render failed, say.
    public init(_ model: Model, state: Model.State? = nil, as name: String = "feed") async throws(HostingError) {
        let registry = Self.makeRegistry()
        self.name = name
        self.registry = registry
        self.host = try await HostedFeeds(registry: registry).host(model, as: name, state: state)
    }

    /// The one place the harness builds a registry: no server, no store.
    private static func makeRegistry() -> FeedRegistry {
        FeedRegistry()
    }

    /// The screen now, as subscribers are sent it.
    public var snapshot: WireSnapshot {
        get async { await (try? await registry.read(name))?.snapshot ?? WireSnapshot() }
    }

    /// The view model's state now.
    public var state: Model.State {
        get async { await host.state }
    }

    /// The feed's version now (1 once hosted; each published batch adds one).
    public var version: Int {
        get async { await (try? await registry.read(name))?.version ?? 0 }
    }

    /// Runs the action `action` with no input (`POST /feeds/{feed}/actions/{action}` with no body).
    @discardableResult
    public func perform(_ action: String) async throws(ViewModelError) -> Step {
        try await perform(action, json: "")
    }

    /// Runs the action `action` with `input` encoded as its JSON body.
    /// - Throws: ``ViewModelError``, as the API maps it; `invalidBody` if `input` does not encode.
    @discardableResult
    public func perform(_ action: String, _ input: some Encodable) async throws(ViewModelError) -> Step {
        try await perform(action, json: try Self.json(input))
    }

    /// Runs the action `action` with `json` as its body, byte for byte.
    @discardableResult
    public func perform(_ action: String, json: String) async throws(ViewModelError) -> Step {
        try await change { () async throws(ViewModelError) in try await self.host.perform(action, body: Array(json.utf8)) }
    }

    /// Merges `json` into the state, as `PATCH /feeds/{feed}` with that body.
    @discardableResult
    public func patch(json: String) async throws(ViewModelError) -> Step {
        try await change { () async throws(ViewModelError) in try await self.host.patch(body: Array(json.utf8)) }
    }

    /// Merges `partial`, encoded as JSON, into the state, as `PATCH /feeds/{feed}`.
    @discardableResult
    public func patch(_ partial: some Encodable) async throws(ViewModelError) -> Step {
        try await patch(json: try Self.json(partial))
    }

    /// Changes the state directly, as a program that holds the host does with ``ViewModelHost/update(_:)``.
    @discardableResult
    public func update(_ body: @escaping @Sendable (inout Model.State) throws -> Void) async throws(ViewModelError) -> Step {
        try await change { () async throws(ViewModelError) in try await self.host.update(body) }
    }

    /// A source whose elements change the state with `update`: pass the closure the view model is
    /// hosted with, then ``Source/send(_:)`` each element.
    public func source<Element: Sendable>(
        of type: Element.Type = Element.self, _ update: @escaping @Sendable (inout Model.State, Element) throws -> Void
    ) -> Source<Element> {
        Source(harness: self, update: update)
    }

    /// Runs the action and answers as the API does: `200` with `{"feed":…,"version":…,"ops":…}`, or
    /// the error's status and JSON body (`422` with `{"error":"invalid field","detail":"title: …"}`).
    public func response(toAction action: String, json: String = "") async -> Response {
        await respond { () async throws(ViewModelError) in try await self.host.perform(action, body: Array(json.utf8)) }
    }

    /// Applies the patch and answers as the API does; see ``response(toAction:json:)``.
    public func response(toPatch json: String) async -> Response {
        await respond { () async throws(ViewModelError) in try await self.host.patch(body: Array(json.utf8)) }
    }

    private func respond(_ body: () async throws(ViewModelError) -> ChangeResult) async -> Response {
        let result: Result<ChangeResult, ViewModelError>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        let answer = switch result {
        case .success(let change): FeedAPI.acknowledgement(feed: name, change)
        case .failure(let error): APIError(error).response
        }
        guard case .bytes(let bytes) = answer.body else { return Response(status: answer.status.code, body: "") }
        return Response(status: answer.status.code, body: String(decoding: bytes, as: UTF8.self))
    }

    private func change(_ body: () async throws(ViewModelError) -> ChangeResult) async throws(ViewModelError) -> Step {
        let before = await snapshot
        _ = try await body()
        return await step(from: before)
    }

    private func step(from before: WireSnapshot) async -> Step {
        let feed = try? await registry.read(name)
        let after = await feed?.snapshot ?? WireSnapshot()
        return Step(version: await feed?.version ?? 0, batch: WireSnapshot.diff(from: before, to: after), snapshot: after)
    }

    private static func json(_ value: some Encodable) throws(ViewModelError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        do { return String(decoding: try encoder.encode(value), as: UTF8.self) } catch {
            throw .invalidBody("the input could not be encoded as JSON: \(error)")
        }
    }
}
