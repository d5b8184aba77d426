import DiffStream
import DiffStreamJSON
import Foundation
@testable import FeedServer
import Testing

/// Two builds of one program (issue 51, item 3), as in HTTPAPITests' KeptStateVersionTests: a
/// `State` at version 1, then at version 2 with a new field `done` (synthesized `Codable` does not
/// default it when decoding).
enum RedisKeptStatePrograms {
    struct Part: Identifiable, Equatable, WireSectionConvertible {
        var id = "tasks"
        var wireSection: WireSection { WireSection(id: id, model: ["title": "Tasks"]) }
    }

    struct Row: Identifiable, Equatable, WireItemConvertible {
        var id = "task"
        var title: String
        var done: Bool
        var wireItem: WireItem { WireItem(id: id, kind: "task", model: ["title": .string(title), "done": .bool(done)]) }
    }

    static func snapshot(_ title: String, done: Bool) throws -> Snapshot<Part, Row> {
        try Snapshot { Section(Part()) { Row(title: title, done: done) } }
    }

    struct V1: HostedViewModel {
        struct State: Codable, Sendable, Equatable {
            var title = ""
            var count = 0
        }

        var initialState: State { State() }
        var acceptsPatch: Bool { true }
        func render(_ state: State) throws -> Snapshot<Part, Row> { try snapshot(state.title, done: false) }
    }

    /// Version 2 without a migration (the default decodes version 1's bytes, which lack `done`).
    struct V2: HostedViewModel {
        struct State: Codable, Sendable, Equatable {
            var title = ""
            var count = 0
            var done = false
        }

        static var stateVersion: Int { 2 }
        var initialState: State { State() }
        var acceptsPatch: Bool { true }
        func render(_ state: State) throws -> Snapshot<Part, Row> { try snapshot(state.title, done: state.done) }
    }

    /// Version 2 with its migration from version 1.
    struct V2Migrating: HostedViewModel {
        typealias State = V2.State

        static var stateVersion: Int { 2 }
        var initialState: State { State() }
        var acceptsPatch: Bool { true }
        func render(_ state: State) throws -> Snapshot<Part, Row> { try snapshot(state.title, done: state.done) }

        func migrate(from version: Int, _ bytes: [UInt8]) throws -> State {
            let old = try JSONDecoder().decode(V1.State.self, from: Data(bytes))
            return State(title: old.title, count: old.count, done: false)
        }
    }

    static func patch(_ json: String) -> [UInt8] { Array(json.utf8) }

    /// The refusal of a feed whose kept state this program cannot read: it names the feed and the decoding error.
    static func isUnreadable(_ error: ViewModelError, _ feed: String) -> Bool {
        guard case .keptStateUnreadable(let named, let reason) = error else { return false }
        return named == feed && reason.contains("done: missing") && APIError(error).status.code == 500
    }

    static func expectUnreadable(_ feed: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("\(feed): expected the kept state to be unreadable", sourceLocation: sourceLocation)
        } catch let error as ViewModelError {
            #expect(isUnreadable(error, feed), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(feed): \(error)", sourceLocation: sourceLocation)
        }
    }
}

/// Kept state across a new program under `--redis`: a state version 1 kept in Redis is migrated by
/// version 2, or left exactly as it is (every use refused with `500`, nothing written) until reset.
/// Version 1's instance keeps running beside version 2's, as in a rolling upgrade.
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason), .timeLimit(.minutes(3)))
struct KeptStateVersionRedisTests {
    typealias P = RedisKeptStatePrograms
    typealias Instance = SharedFeedRegistryTests.Instance
    static let users = 50

    @Test(arguments: [true, false])
    func aFamilyInRedis(migrates: Bool) async throws {
        try await RedisTestServer.with { server in
            let prefix = "tasks"
            func feed(_ user: Int) -> String { "\(prefix).u\(user)" }
            let old = try await Instance(server), new = try await Instance(server)
            let oldHosted = HostedFeeds(registry: old.registry)
            let oldFamily = try await oldHosted.host(family: prefix, P.V1()) { _ in P.V1.State(title: "from the loader") }
            for user in 0..<Self.users {
                _ = try await oldFamily.member("u\(user)").patch(body: P.patch(#"{"title":"user \#(user)","count":\#(user)}"#))
            }
            let kept = try await (0..<Self.users).asyncMap { try #require(try await old.store.read(feed($0))?.viewState) }
            let newHosted = HostedFeeds(registry: new.registry)

            if migrates {
                let family = try await newHosted.host(family: prefix, P.V2Migrating()) { _ in P.V2.State(title: "fresh") }
                for user in 0..<Self.users {
                    #expect(try await family.member("u\(user)").state == P.V2.State(title: "user \(user)", count: user, done: false), "user \(user) keeps their change")
                    _ = try await family.member("u\(user)").patch(body: P.patch(#"{"done":true}"#))
                    let bytes = try #require(try await new.store.read(feed(user))?.viewState)
                    #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"_stateVersion":2,"#))
                }
                // Version 1's instance still reads version 2's state (and writes its own form back, without `done`),
                // and version 2 migrates what it wrote again, with its change.
                _ = try await oldFamily.member("u0").patch(body: P.patch(#"{"title":"from the old instance"}"#))
                _ = try await family.member("u0").patch(body: P.patch(#"{"count":7}"#))
                #expect(try await family.member("u0").state == P.V2.State(title: "from the old instance", count: 7, done: false))
                await family.stop()
            } else {
                let family = try await newHosted.host(family: prefix, P.V2()) { _ in P.V2.State(title: "fresh") }
                for user in 0..<Self.users {
                    await P.expectUnreadable(feed(user)) { _ = try await family.member("u\(user)") }
                    await P.expectUnreadable(feed(user)) { try await newHosted.prepare(feed(user)) }
                    await P.expectUnreadable(feed(user)) { _ = try await newHosted.hosted(feed(user))?.patch(body: P.patch(#"{"title":"x"}"#), writeID: nil) }
                }
                #expect(await family.liveCount == 0, "no member was made")
                for user in 0..<Self.users {
                    #expect(try await new.store.read(feed(user))?.viewState == kept[user], "user \(user)'s bytes stay in Redis as they were")
                }
                for user in 0..<Self.users {
                    #expect(try await newHosted.resetKeptState(feed(user)))
                    #expect(try await family.member("u\(user)").state == P.V2.State(title: "fresh"), "made afresh by the loader")
                    _ = try await family.member("u\(user)").patch(body: P.patch(#"{"done":true}"#))
                }
                await family.stop()
            }
            await oldFamily.stop()
            await old.close(); await new.close()
        }
    }

    @Test(arguments: [true, false])
    func hostedViewModelsInRedis(migrates: Bool) async throws {
        try await RedisTestServer.with { server in
            func feed(_ user: Int) -> String { "tasks\(user)" }
            let old = try await Instance(server), new = try await Instance(server)
            let oldHosted = HostedFeeds(registry: old.registry)
            for user in 0..<Self.users {
                let host = try await oldHosted.host(P.V1(), as: feed(user))
                _ = try await host.patch(body: P.patch(#"{"title":"user \#(user)"}"#))
            }
            let kept = try await (0..<Self.users).asyncMap { try #require(try await old.store.read(feed($0))?.viewState) }
            let newHosted = HostedFeeds(registry: new.registry)
            if migrates {
                for user in 0..<Self.users {
                    let host = try await newHosted.host(P.V2Migrating(), as: feed(user))
                    #expect(await host.state == P.V2.State(title: "user \(user)", count: 0, done: false), "feed \(user) keeps its change")
                    _ = try await host.patch(body: P.patch(#"{"done":true}"#))
                    let bytes = try #require(try await new.store.read(feed(user))?.viewState)
                    #expect(try JSONDecoder().decode(P.V2.State.self, from: Data(bytes)) == P.V2.State(title: "user \(user)", count: 0, done: true))
                }
            } else {
                var hosts: [ViewModelHost<P.V2>] = []
                for user in 0..<Self.users {
                    hosts.append(try await newHosted.host(P.V2(), as: feed(user)))  // hosted, refusing: the program still starts
                    await P.expectUnreadable(feed(user)) { try await newHosted.prepare(feed(user)) }
                    await P.expectUnreadable(feed(user)) { _ = try await hosts[user].patch(body: P.patch(#"{"title":"x"}"#)) }
                }
                for user in 0..<Self.users {
                    #expect(try await new.store.read(feed(user))?.viewState == kept[user], "feed \(user)'s bytes stay in Redis as they were")
                }
                for user in 0..<Self.users {
                    #expect(try await newHosted.resetKeptState(feed(user)))
                    #expect(await hosts[user].state == P.V2.State(), "started again from the initial state")
                    try await newHosted.prepare(feed(user))
                    _ = try await hosts[user].patch(body: P.patch(#"{"done":true}"#))
                }
            }
            await old.close(); await new.close()
        }
    }
}

extension Range where Bound == Int {
    /// The results of `transform` for each element, in order, one at a time.
    func asyncMap<T>(_ transform: (Int) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
