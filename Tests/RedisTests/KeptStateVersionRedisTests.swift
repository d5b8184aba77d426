import DiffStream
import DiffStreamJSON
import Foundation
@testable import FeedServer
import HostingTestSupport
import Testing

extension KeptStatePrograms {
    /// Expects `body` to be refused because `feed`'s kept state cannot be read (``isUnreadable(_:_:)``), with `500`.
    static func expectUnreadable(_ feed: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("\(feed): expected the kept state to be unreadable", sourceLocation: sourceLocation)
        } catch let error as ViewModelError {
            #expect(isUnreadable(error, feed) && APIError(error).status.code == 500, "\(error)", sourceLocation: sourceLocation)
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
    typealias P = KeptStatePrograms
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
