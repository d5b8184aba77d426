import FeedCore
import HTTPAPI
import ViewModelHosting
import FeedStorage
import Foundation
import Synchronization
import Testing

/// Families (issue 38) driven without sockets: one load per key however many first uses, nothing
/// half-made when the loader fails, "no such key" remembered, the timeout, the limit, sources stopped
/// with their member, and the program acting on members live or not.
struct ViewModelFamilyTests {
    /// Counts the loader's runs and lets a test hold them until it says.
    final class Loader: Sendable {
        let runs = Mutex(0)
        let gate = AsyncStream<Void>.makeStream()

        func count() -> Int { runs.withLock { $0 } }
    }

    /// A flag several tasks see.
    final class Flag: Sendable {
        let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    @Test func concurrentFirstUsesRunTheLoaderOnce() async throws {
        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry)
        let loader = Loader()
        let family = try await hosted.host(family: "count", Counter()) { member in
            loader.runs.withLock { $0 += 1 }
            for await _ in loader.gate.stream { break }  // held until the test lets it go
            return Counter.State(count: member.key.count, label: member.key)
        }
        let members = Task {
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await family.member("alice").name } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        while loader.count() == 0 { await Task.yield() }
        loader.gate.continuation.yield()
        #expect(try await members.value == Array(repeating: "count.alice", count: 20))
        #expect(loader.count() == 1)
        // The loaded state, as rendered (in memory the feed keeps no encoded state: the host has it).
        #expect(try await registry.read("count.alice")?.snapshot.item(withID: "value")?.model.description == #"{"count":5,"label":"alice"}"#)
        #expect(await family.liveCount == 1)
    }

    enum Boom: Error, CustomStringConvertible {
        case boom
        var description: String { "the database is down" }
    }

    @Test func aFailingLoaderMakesNothingAndTheNextUseTriesAgain() async throws {
        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry)
        let failed = Flag()
        let family = try await hosted.host(family: "count", Counter()) { _ in
            if !failed.isSet {
                failed.set()
                throw Boom.boom
            }
            return Counter.State()
        }
        await #expect(throws: ViewModelError.loaderFailed(feed: "count.bob", reason: "the database is down")) { try await family.member("bob") }
        #expect(try await registry.read("count.bob") == nil, "nothing half-made")
        #expect(try await family.member("bob").name == "count.bob")
    }

    @Test func noSuchKeyIsRememberedAndTheProgramCanDeleteIt() async throws {
        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry)
        let loader = Loader()
        let family = try await hosted.host(family: "count", Counter()) { member in
            loader.runs.withLock { $0 += 1 }
            guard member.key != "ghost" else { throw NoSuchMember() }
            return Counter.State()
        }
        for _ in 0..<3 {
            await #expect(throws: ViewModelError.noSuchMember(feed: "count.ghost", family: "count", key: "ghost")) { try await family.member("ghost") }
        }
        #expect(loader.count() == 1, "answered from memory after the first")
        _ = try await family.member("carol")
        #expect(try await family.delete("carol"))
        #expect(try await registry.read("carol") == nil)
    }

    @Test func aLoaderPastItsTimeoutIsAbandoned() async throws {
        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry)
        let limits = FamilyLimits(loaderTimeout: 0.05)
        let family = try await hosted.host(family: "count", Counter(), limits: limits) { _ in
            try await Task.sleep(for: .seconds(3600))
            return Counter.State()
        }
        await #expect(throws: ViewModelError.loaderTimedOut(feed: "count.slow", seconds: 0.05)) { try await family.member("slow") }
        #expect(try await registry.read("count.slow") == nil)
    }

    @Test func aFullFamilyRefusesANewKeyWhileNoMemberIsIdle() async throws {
        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry)
        let family = try await hosted.host(family: "count", Counter(), limits: FamilyLimits(idle: 3600, maxLive: 2)) { _ in Counter.State() }
        _ = try await family.member("a")
        _ = try await family.member("b")
        var refusal: ViewModelError?
        do { _ = try await family.member("c") } catch { refusal = error }
        guard case .familyFull(let feed, let name, let maxLive, let retryAfter)? = refusal else {
            Issue.record("a third member past maxLive 2: \(String(describing: refusal))")
            return
        }
        #expect(feed == "count.c" && name == "count" && maxLive == 2 && retryAfter > 0)
        #expect(await family.liveCount == 2)
    }

    /// Monotonic seconds the test moves.
    final class ManualClock: Sendable {
        let seconds = Mutex(0.0)
        func advance(by delta: Double) { seconds.withLock { $0 += delta } }
        var now: Double { seconds.withLock { $0 } }
    }

    @Test func theProgramUpdatesAMemberLiveOrNotAndItsSourcesStopWhenDropped() async throws {
        let registry = FeedRegistry(), clock = ManualClock()
        let (ticks, feed) = AsyncStream<Int>.makeStream()
        let ended = Flag()
        // Made directly, without its timer: the test says when time passes and when to expire.
        let family = ViewModelFamily(prefix: "count", model: Counter(), limits: FamilyLimits(idle: 60), registry: registry, clock: { clock.now }) { member in
            member.follow(AsyncStream<Int> { continuation in
                let task = Task { for await tick in ticks { continuation.yield(tick) }; continuation.finish() }
                continuation.onTermination = { _ in task.cancel(); ended.set() }
            }) { state, tick in state.count += tick }
            return Counter.State()
        }
        let changed = try await family.update("dora") { $0.label = "hi" }
        #expect(changed.version == 2)
        feed.yield(5)
        while try await registry.read("count.dora")?.version != 3 { await Task.yield() }
        clock.advance(by: 59)
        await family.expire()
        #expect(await family.liveCount == 1, "not idle for 60 s yet")
        clock.advance(by: 2)
        await family.expire()
        #expect(await family.liveCount == 0)
        while !ended.isSet { await Task.yield() }
        #expect(try await registry.read("count.dora") == nil)
    }

    @Test func theLastMemberLeavingHandsTheFreedMemoryBack() async throws {
        let registry = FeedRegistry(), clock = ManualClock()
        let releases = Mutex(0)
        let family = ViewModelFamily(prefix: "count", model: Counter(), limits: FamilyLimits(idle: 60), registry: registry, clock: { clock.now },
                                     releaseMemory: { releases.withLock { $0 += 1 } }) { _ in Counter.State() }
        _ = try await family.update("ann") { $0.label = "a" }
        _ = try await family.update("bob") { $0.label = "b" }
        await family.expire()
        #expect(releases.withLock { $0 } == 0, "nothing dropped")
        clock.advance(by: 61)
        await family.expire()
        #expect(await family.liveCount == 0)
        #expect(releases.withLock { $0 } == 1, "the sweep that let the last member go")
        await family.expire()
        #expect(releases.withLock { $0 } == 1, "a sweep that dropped nothing releases nothing")
    }

    @Test(.timeLimit(.minutes(1))) func theLoadersDeadlineTimerEndsWithTheAnswer() async {
        let gate = OnceGate()
        let timer = Task { _ = try? await Task.sleep(for: .seconds(3600)) }
        gate.cancelOnPass(timer)
        #expect(gate.pass())
        await timer.value  // cancelled by the pass: within the time limit, not in an hour
        #expect(timer.isCancelled)
        #expect(!gate.pass())
        let late = Task { _ = try? await Task.sleep(for: .seconds(3600)) }
        gate.cancelOnPass(late)  // after the pass: cancelled at once
        await late.value
        #expect(late.isCancelled)
    }

    @Test func aLoadWithinItsDeadlineAnswersAndLeavesNoTimer() async throws {
        let result = await ViewModelFamily<Counter>.withDeadline(seconds: 3600) { 42 }
        #expect(try result?.get() == 42)
    }
}

/// The rule for writes and truth (issue 52, docs/view-models.md "Writes and truth"): no acknowledged
/// write is undone when a member is made again, after an idle drop or a restart.
struct FamilyWritesTests {
    /// A member store in a directory of its own, removed with it.
    final class KeptDirectory: Sendable {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("family-writes-\(UUID().uuidString)").path
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func open() throws -> MemberStore { try MemberStore(directory: path) }
    }

    typealias ManualClock = ViewModelFamilyTests.ManualClock

    /// The kept state each make handed the loader.
    final class Loads: Sendable {
        let seen = Mutex<[Counter.State?]>([])
    }

    static func family(_ truth: FamilyTruth, kept: MemberStore?, clock: ManualClock, loads: Loads = Loads(), registry: FeedRegistry = FeedRegistry()) -> ViewModelFamily<Counter> {
        ViewModelFamily(prefix: "count", model: Counter(), limits: FamilyLimits(idle: 60), truth: truth, registry: registry, kept: kept,
                        clock: { clock.now }) { member in
            loads.seen.withLock { $0.append(member.kept) }
            return Counter.State(count: 100, label: "from the loader")
        }
    }

    @Test func aKeptMembersPatchAndActionSurviveADropAndARestart() async throws {
        let directory = try KeptDirectory(), clock = ManualClock()
        var store = try directory.open()
        var family = Self.family(.kept, kept: store, clock: clock)
        _ = try await family.member("ann").patch(body: Array(#"{"label":"mine"}"#.utf8), writeID: nil)
        _ = try await family.member("ann").perform("increment", body: [], writeID: nil)
        clock.advance(by: 61)
        await family.expire()
        #expect(await family.liveCount == 0)
        var state = try await family.member("ann").state
        #expect(state == Counter.State(count: 101, label: "mine"), "made again after a drop: what was written, not the loader's")
        await family.stop()
        store.close()
        store = try directory.open()
        family = Self.family(.kept, kept: store, clock: clock)
        state = try await family.member("ann").state
        #expect(state == Counter.State(count: 101, label: "mine"), "made again after a restart")
        store.close()
    }

    @Test func aProgramFamilyRefusesPatchAndItsLoaderSeesTheKeptState() async throws {
        let directory = try KeptDirectory(), clock = ManualClock()
        let store = try directory.open()
        defer { store.close() }
        let loads = Loads()
        let family = Self.family(.program, kept: store, clock: clock, loads: loads)
        let member = try await family.member("bob")
        await #expect(throws: ViewModelError.patchUndoneByLoader(feed: "count.bob", family: "count")) {
            try await member.patch(body: Array(#"{"label":"lost"}"#.utf8), writeID: nil)
        }
        let label = await member.state.label
        #expect(label == "from the loader", "nothing changed")
        _ = try await member.perform("increment", body: [], writeID: nil)
        clock.advance(by: 61)
        await family.expire()
        _ = try await family.member("bob")
        #expect(loads.seen.withLock { $0 } == [nil, Counter.State(count: 101, label: "from the loader")], "the second make was handed what was kept")
    }
}

/// A family-wide source (issue 52, item 4): followed once, applied to every live member, and to members
/// made later, new or made again after a drop.
struct FamilyWideSourceTests {
    typealias ManualClock = ViewModelFamilyTests.ManualClock

    /// Waits (yielding, no clock) until `key`'s state has `label`.
    static func label(_ family: ViewModelFamily<Counter>, _ key: String, becomes label: String) async throws {
        while try await family.member(key).state.label != label { await Task.yield() }
    }

    @Test func anElementReachesLiveMembersAndMembersMadeLater() async throws {
        let directory = try FamilyWritesTests.KeptDirectory(), clock = ManualClock(), registry = FeedRegistry()
        let store = try directory.open()
        defer { store.close() }
        let family = FamilyWritesTests.family(.kept, kept: store, clock: clock, registry: registry)
        let (catalogue, publish) = AsyncStream<Int>.makeStream()
        let following = family.follow(catalogue) { state, version, key in state.label = "\(key) sees \(version)" }
        defer { following.cancel() }
        _ = try await family.member("bob")
        clock.advance(by: 61)
        _ = try await family.member("ann")
        await family.expire()
        #expect(await family.liveCount == 1, "bob dropped, ann live")

        let before = try await #require(try await registry.read("count.ann")).version
        publish.yield(1)
        try await Self.label(family, "ann", becomes: "ann sees 1")
        let after = try await #require(try await registry.read("count.ann")).version
        #expect(after == before + 1, "one batch")
        let bob = try await family.member("bob").state.label, cat = try await family.member("cat").state.label
        #expect(bob == "bob sees 1", "dropped, made again from what was kept: caught up")
        #expect(cat == "cat sees 1", "a new key starts from it")

        publish.yield(2)
        for key in ["ann", "bob", "cat"] { try await Self.label(family, key, becomes: "\(key) sees 2") }
        let counts = try await family.member("ann").state.count
        #expect(counts == 100, "the rest of the state is the member's own")
    }
}
