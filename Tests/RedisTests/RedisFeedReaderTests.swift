import Testing
import Redis
@testable import RedisFeedStore

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisFeedReaderTests {
    typealias Fixture = RedisFeedCommitterTests.Fixture

    /// A feed at version 6 with a window of 3 (versions 4, 5, 6).
    static func feedAtSix(_ fixture: Fixture) async throws {
        _ = try await fixture.committer.commit(fixture.write(base: 0, window: 3))
        for base in 1..<6 { _ = try await fixture.committer.commit(fixture.write(base: base, window: 3)) }
    }

    @Test func aFeedIsReadWholeAtOnePoint() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            let reader = RedisFeedReader(client: fixture.client, keys: fixture.committer.keys)
            #expect(try await reader.read("news") == nil)
            try await Self.feedAtSix(fixture)
            let feed = try #require(try await reader.read("news"))
            #expect(feed.history == "h1" && feed.version == 6)
            #expect(feed.snapshot == Array("snapshot 6".utf8) && feed.viewState == Array("state 6".utf8))
            #expect(feed.batches.map(\.version) == [4, 5, 6])
            #expect(feed.batches.map(\.event) == [4, 5, 6].map { Array("batch \($0)".utf8) })
        }
    }

    static let resumes: [(history: String, after: Int, expected: [Int]?)] = [
        ("h1", 3, [4, 5, 6]),
        ("h1", 5, [6]),
        ("h1", 6, []),
        ("h1", 2, nil),  // the window no longer reaches back
        ("h1", 7, nil),  // ahead of Redis: lost data
        ("h2", 5, nil),  // another history
    ]

    @Test(arguments: resumes)
    func batchesAfterAVersion(history: String, after: Int, expected: [Int]?) async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            try await Self.feedAtSix(fixture)
            let reader = RedisFeedReader(client: fixture.client, keys: fixture.committer.keys)
            let batches = try await reader.batches("news", history: history, after: after)
            #expect(batches?.map(\.version) == expected)
            #expect(batches?.map(\.event) == expected?.map { Array("batch \($0)".utf8) })
        }
    }

    @Test func aDeleteRemovesTheFeedPublishesAndAnswersARetryTheSame() async throws {
        try await RedisTestServer.with { server in
            let fixture = try await Fixture(server: server)
            defer { fixture.client.stop() }
            try await Self.feedAtSix(fixture)
            let listener = try RedisConnection(url: server.url, timeout: 2)
            _ = try listener.command(["SUBSCRIBE", fixture.committer.keys.channel("news")])
            #expect(try await fixture.committer.delete(feed: "news", epoch: fixture.epoch, writeID: "d1", answer: Array("gone".utf8))
                    == .committed(version: 1, answer: Array("gone".utf8), first: true))
            #expect(try listener.readReply().array?[2].string == "h1 0\n")
            let reader = RedisFeedReader(client: fixture.client, keys: fixture.committer.keys)
            #expect(try await reader.read("news") == nil)
            #expect(try await reader.batches("news", history: "h1", after: 6) == nil)
            #expect(try await fixture.committer.delete(feed: "news", epoch: fixture.epoch, writeID: "d1") == .committed(version: 1, answer: Array("gone".utf8), first: false))
            #expect(try await fixture.committer.delete(feed: "news", epoch: fixture.epoch, writeID: "d2") == .committed(version: 0, answer: [], first: true))
            // Created again: a new history from version 1, no batches of the old one.
            #expect(try await fixture.committer.commit(fixture.write(base: 0, history: "h2")) == .committed(version: 1, answer: [], first: true))
            #expect(try await reader.read("news")?.batches.isEmpty == true)
            #expect(try await fixture.committer.delete(feed: "news", epoch: "other", writeID: "d3") == .epochChanged(current: fixture.epoch))
        }
    }
}
