import Testing
import Redis
@testable import RedisFeedStore

/// The view-state-only script (`RedisScripts.viewState`): a view model's state replaced at the version
/// it belongs to, with no new version, no batch and nothing published.
@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisViewStateTests {
    typealias Fixture = RedisFeedCommitterTests.Fixture

    @Test func theStateIsReplacedWithoutANewVersionOrABatch() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            _ = try await fixture.committer.commit(fixture.write(base: 1))
            let listener = try RedisConnection(url: server.url, timeout: 2)
            _ = try listener.command(["SUBSCRIBE", fixture.committer.keys.channel("news")])
            #expect(try await fixture.committer.setViewState(feed: "news", epoch: fixture.epoch, version: 2, history: "h1", state: Array("new".utf8), writeID: "s1")
                    == .committed(version: 2, answer: [], first: true))
            let stored = try await fixture.stored()
            #expect(stored.version == 2 && stored.state == "new" && stored.snapshot == "snapshot 2" && stored.history == "h1")
            #expect(try await fixture.streamVersions() == [2])
            // The state alone is published (no batch, no snapshot: length -1), so other instances' copies hold it.
            #expect(try listener.readReply().array?[2].string == "h1 2 0 -1 3\nnew")
            _ = try await fixture.committer.commit(fixture.write(base: 2))
            #expect(try listener.readReply().array?[2].string == "h1 3 7 10 7\nbatch 3snapshot 3state 3")
        }
    }

    /// A version other than the stored one (another instance wrote first, or no feed), or the stored
    /// version of another history (the feed deleted and made again to the same version), is a conflict
    /// naming what Redis holds, and changes nothing.
    static let refusals: [(version: Int, history: String?, feed: String, expected: RedisCommitOutcome)] = [
        (1, nil, "news", .conflict(version: 2, history: "h1")),
        (3, nil, "news", .conflict(version: 2, history: "h1")),
        (2, "h0", "news", .conflict(version: 2, history: "h1")),
        (0, nil, "missing", .conflict(version: 0, history: "")),
        (1, nil, "missing", .conflict(version: 0, history: "")),
    ]

    @Test(arguments: refusals)
    func aStateForAnotherVersionIsAConflict(version: Int, history: String?, feed: String, expected: RedisCommitOutcome) async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            _ = try await fixture.committer.commit(fixture.write(base: 1))
            #expect(try await fixture.committer.setViewState(feed: feed, epoch: fixture.epoch, version: version, history: history, state: Array("x".utf8), writeID: "s1") == expected)
            #expect(try await fixture.stored().state == "state 2")
            #expect(try await fixture.stored("missing").version == 0)
        }
    }

    /// A state written under a lease's fencing token is refused once another instance holds the lease
    /// (a stale holder of a hosted source), as a commit is.
    @Test func aStateUnderAStaleFencingTokenIsRefused() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            let admin = try RedisConnection(url: server.url, timeout: 2)
            _ = try admin.command(["SET", fixture.committer.keys.lease("news"), "holder"])
            #expect(try await fixture.committer.setViewState(feed: "news", epoch: fixture.epoch, version: 1, state: Array("stale".utf8), writeID: "s1", fence: "old")
                    == .fenced(holder: "holder"))
            #expect(try await fixture.committer.setViewState(feed: "news", epoch: fixture.epoch, version: 1, state: Array("held".utf8), writeID: "s2", fence: "holder")
                    == .committed(version: 1, answer: [], first: true))
            #expect(try await fixture.stored().state == "held")
        }
    }

    @Test func aRetryOfTheSameWriteGetsItsFirstAnswerAndALostDataEpochIsRefused() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            _ = try await fixture.committer.commit(fixture.write(base: 0))
            #expect(try await fixture.committer.setViewState(feed: "news", epoch: fixture.epoch, version: 1, state: Array("a".utf8), writeID: "s1")
                    == .committed(version: 1, answer: [], first: true))
            _ = try await fixture.committer.commit(fixture.write(base: 1))
            // The same write id again, even at another version: its first answer, and the state stays.
            #expect(try await fixture.committer.setViewState(feed: "news", epoch: fixture.epoch, version: 2, state: Array("b".utf8), writeID: "s1")
                    == .committed(version: 1, answer: [], first: false))
            #expect(try await fixture.stored().state == "state 2")
            #expect(try await fixture.committer.setViewState(feed: "news", epoch: "other", version: 2, state: Array("c".utf8), writeID: "s2")
                    == .epochChanged(current: fixture.epoch))
        }
    }
}
