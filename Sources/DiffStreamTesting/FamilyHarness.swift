import DiffStream
import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import FeedStorage
import Foundation
import Synchronization

/// Drives a family of view models (issue 38) in a unit test, with no server and no sockets: make a
/// member, act on it, drop it as the idle timer would, make it again, and see what a client that
/// comes back from a position would get. Time is the harness's own: nothing is dropped until
/// ``drop(_:)`` says so.
///
/// With `keeping` (the default), members are kept in a ``MemberStore`` in a temporary directory, as
/// `--data` keeps them: a member made again goes on with its history. Without, they are kept in
/// memory only, as `--data none` does: a member made again starts a new history.
///
/// ```swift
/// let homes = try FamilyHarness(HomeViewModel(), prefix: "home") { member in HomeFamily.state(for: member.key) }
/// let first = try await homes.make("alice")
/// _ = try await homes.patch("alice", json: #"{"banner":null}"#)
/// let position = try #require(await homes.position("alice"))
/// await homes.drop("alice")
/// #expect(try await homes.resume("alice", from: position) == .batches([…]))   // the banner back: one batch
/// ```
public final class FamilyHarness<Model: HostedViewModel>: Sendable {
    /// What a client resuming from a position gets first.
    public enum Resume: Sendable, Equatable {
        /// The batches after its position, oldest first (none: it is current).
        case batches([WireBatch])
        /// A snapshot of the member now (its position is of another history, or past the window).
        case snapshot(WireSnapshot)
    }

    /// The family, as the server hosts it.
    public let family: ViewModelFamily<Model>
    /// The registry its members' feeds are on: in memory, with no transport.
    public let registry: FeedRegistry
    /// Where the members are kept (nil: in memory only).
    public let kept: MemberStore?
    private let clock = HarnessClock()
    private let directory: String?

    /// Hosts `model` as the family `prefix`, each member made by `load`.
    /// - Parameter keeping: keep members in a store on disk (a temporary directory), as `--data` does.
    /// - Throws: the store's error when its directory cannot be made.
    public init(_ model: Model, prefix: String = "family", limits: FamilyLimits = FamilyLimits(), truth: FamilyTruth = .kept, keeping: Bool = true,
                load: @escaping @Sendable (FamilyMember<Model>) async throws -> Model.State) throws {
        let registry = FeedRegistry()
        var directory: String?
        var kept: MemberStore?
        if keeping {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("family-harness-\(UUID().uuidString)").path
            do { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) } catch {
                throw StoreError.directory(path: path, reason: "\(error)")
            }
            directory = path
            do { kept = try MemberStore(directory: path) } catch {
                try? FileManager.default.removeItem(atPath: path)
                throw error
            }
        }
        self.registry = registry
        self.kept = kept
        self.directory = directory
        let clock = self.clock
        self.family = ViewModelFamily(prefix: prefix, model: model, limits: limits, truth: truth, registry: registry, kept: kept,
                                      clock: { clock.now }, load: load)
    }

    deinit {
        kept?.close()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Makes member `key` if it is not live (a use, as a read is), and returns its screen.
    @discardableResult
    public func make(_ key: String) async throws(ViewModelError) -> WireSnapshot {
        _ = try await family.member(key)
        return await screen(key)
    }

    /// The screen of member `key` as subscribers are sent it (empty when it has no feed held).
    public func screen(_ key: String) async -> WireSnapshot {
        await (try? await registry.read(family.feed(key)))?.snapshot ?? WireSnapshot()
    }

    /// The event id of member `key`'s current version (what a client that saw it holds), or nil when
    /// it has no feed held.
    public func position(_ key: String) async -> String? {
        guard let feed = try? await registry.read(family.feed(key)), await feed.exists else { return nil }
        return await EventID(history: feed.history, version: feed.version).description
    }

    /// Runs the action `action` of member `key` with `json` as its body (the member is made first if
    /// need be), and returns the version it left the feed at.
    @discardableResult
    public func perform(_ key: String, _ action: String, json: String = "") async throws(ViewModelError) -> Int {
        try await family.member(key).perform(action, body: Array(json.utf8), writeID: nil).version
    }

    /// Merges `json` into member `key`'s state, as `PATCH /feeds/PREFIX.KEY`.
    @discardableResult
    public func patch(_ key: String, json: String) async throws(ViewModelError) -> Int {
        try await family.member(key).patch(body: Array(json.utf8), writeID: nil).version
    }

    /// Drops member `key`, and every other member idle as long, as the idle timer would once
    /// ``FamilyLimits/idle`` seconds have passed with no use and no subscriber.
    public func drop(_ key: String) async {
        clock.advance(by: family.limits.idle + 1)
        await family.expire()
    }

    /// What a client that saw member `key` at `lastEventID` gets first when it comes back (the member
    /// is made again first if it was dropped).
    public func resume(_ key: String, from lastEventID: String) async throws(ViewModelError) -> Resume {
        _ = try await family.member(key)
        guard let feed = try? await registry.read(family.feed(key)) else { return .snapshot(WireSnapshot()) }
        guard let missed = await feed.missedBatches(since: lastEventID) else { return .snapshot(await feed.snapshot) }
        return .batches(missed.flatMap { Self.batches(in: $0.bytes) })
    }

    /// The batches of the `event: batch` blocks in `events`.
    static func batches(in events: [UInt8]) -> [WireBatch] {
        let text = String(decoding: events, as: UTF8.self)
        return text.components(separatedBy: "\n\n").compactMap { block in
            guard let line = block.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }),
                  let data = try? WireCodec.decodeEventData(Array(line.dropFirst(6).utf8), carrying: .batch),
                  case .batch(let batch)? = try? data.body.get() else { return nil }
            return batch
        }
    }
}

/// The harness's monotonic seconds: they pass only when a test says so.
final class HarnessClock: Sendable {
    private let seconds = Mutex(0.0)

    var now: Double { seconds.withLock { $0 } }

    func advance(by delta: Double) {
        seconds.withLock { $0 += delta }
    }
}
