import FeedCore
import DiffStreamJSON
import Foundation

/// Why a view model could not be hosted.
public struct HostingError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// The hosted view models, by feed name: `try await feeds.host(TodoViewModel(), as: "todo")`.
///
/// Hosted feeds are listed by `GET /feeds` with their actions, take `PATCH` (if the view model accepts
/// one) and `POST /feeds/{feed}/actions/{action}`, and refuse `PUT` and `DELETE` with `409`.
public final class HostedFeeds: @unchecked Sendable {
    // `@unchecked Sendable`: `hosts` and `reserved` are only touched with `lock` held; everything
    // else is immutable.
    private let lock = NSLock()
    private var hosts: [String: any HostedFeed] = [:]
    private var reserved: Set<String> = []
    public let registry: FeedRegistry

    public init(registry: FeedRegistry) {
        self.registry = registry
    }

    /// Hosts `model` as the feed `name`. It starts from `state` if given; else from the state a
    /// durable store kept with the feed (if it still decodes as `Model.State`); else from the model's
    /// initial state. Throws if the name is not a valid feed id or is hosted already, if the first
    /// render throws, or if the store refuses the first snapshot. A feed of that name that is not
    /// hosted (say, restored from the store after a `PUT`) is taken over.
    @discardableResult
    public func host<Model: HostedViewModel>(_ model: Model, as name: String, state: Model.State? = nil) async throws(HostingError) -> ViewModelHost<Model> {
        guard FeedID.isValid(name) else { throw HostingError(description: "'\(name)' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)") }
        let taken = lock.withLock { () -> Bool in
            if reserved.contains(name) { return true }
            reserved.insert(name)
            return false
        }
        guard !taken else { throw HostingError(description: "a view model is already hosted as '\(name)'") }
        if registry.shared != nil {
            // Several instances host it: start from the state the store holds (unless `state` is
            // given), committed only if no other instance changed it meanwhile.
            let host = ViewModelHost(name: name, model: model, state: state ?? model.initialState, registry: registry)
            do {
                _ = try await host.update(options: FeedWriteOptions()) { current in if let state { current = state } }
            } catch {
                lock.withLock { _ = reserved.remove(name) }
                throw HostingError(description: "'\(name)': \(error.description)")
            }
            lock.withLock { hosts[name] = host }
            return host
        }
        var start = state ?? model.initialState
        if state == nil, let bytes = await (try? await registry.read(name))?.viewState,
           let stored = try? JSONDecoder().decode(Model.State.self, from: Data(bytes)) {
            start = stored
        }
        do throws(ViewModelError) {
            let snapshot = try ViewModelHost<Model>.wire(model, start)
            let bytes = try ViewModelHost<Model>.storedBytes(start)
            do { _ = try await registry.write(name, snapshot: snapshot, viewState: bytes, hosted: true) } catch { throw .notPublished(error) }
        } catch {
            lock.withLock { _ = reserved.remove(name) }
            throw HostingError(description: "'\(name)': \(error.description)")
        }
        let host = ViewModelHost(name: name, model: model, state: start, registry: registry)
        lock.withLock { hosts[name] = host }
        return host
    }

    /// Whether `name` is a hosted feed (or is being set up as one).
    public func isHosted(_ name: String) -> Bool {
        lock.withLock { reserved.contains(name) }
    }

    /// Whether the hosted feed `feed` has an action `action` declared public. False for anything unknown.
    public func isPublic(action: String, feed: String) -> Bool {
        guard let host = hosted(feed) else { return false }
        return host.actionList.contains { $0.name == action && $0.isPublic }
    }

    /// The names of the hosted feeds, sorted.
    public var names: [String] {
        lock.withLock { hosts.keys.sorted() }
    }

    package func hosted(_ name: String) -> (any HostedFeed)? {
        lock.withLock { hosts[name] }
    }
}
