import DiffStreamJSON
import FeedCore
import HTTPAPI
import Testing
import TestSupport

/// Live log reads waiting at a feed's head: one subscriber group per feed, woken together.
struct LogPollsTests {
    static func feed(version: Int = 1) async throws -> Feed {
        let feed = Feed(name: "f", replayLimit: 8, transport: MemoryBroadcaster(), metrics: FeedMetrics(), store: nil)
        for version in 1...version { try await feed.publish(FeedLogReadSnapshots.snapshot(version)) }
        return feed
    }

    static func head(_ feed: Feed) async -> EventID { EventID(history: await feed.history, version: await feed.version) }

    /// Many readers at the head are one subscriber of the feed, counted as their number (so the feed is
    /// not idle); the next batch wakes them all with the same event, and the group ends.
    @Test func readersAtTheHeadWaitAsOneGroup() async throws {
        let feed = try await Self.feed(version: 2)
        let polls = LogPolls()
        let head = await Self.head(feed)
        let readers = (0..<5).map { _ in Task { await polls.wait(on: feed, at: head, seconds: 60) } }
        #expect(await eventually { await feed.subscriberCount == 5 })
        #expect(await !feed.isIdle)
        #expect(polls.count == 1)
        try await feed.publish(FeedLogReadSnapshots.snapshot(3))
        var woken: [LogWake] = []
        for reader in readers { woken.append(await reader.value) }
        guard case .events(let events) = woken[0] else { Issue.record("not events: \(woken[0])"); return }
        #expect(woken.allSatisfy { $0 == woken[0] })
        #expect(events.map(\.id) == [EventID(history: head.history, version: 3).description])
        #expect(await eventually { await feed.subscriberCount == 0 && polls.count == 0 })
    }

    @Test func aReaderBehindTheHeadIsToldToReadAgain() async throws {
        let feed = try await Self.feed(version: 3)
        let history = await feed.history
        #expect(await LogPolls().wait(on: feed, at: EventID(history: history, version: 2), seconds: 60) == .readAgain)
        #expect(await LogPolls().wait(on: feed, at: EventID(history: "ffffffffffffffff", version: 3), seconds: 60) == .readAgain)
    }

    @Test func aReaderWhoseTimeIsUpLeaves() async throws {
        let feed = try await Self.feed()
        let polls = LogPolls()
        let head = await Self.head(feed)
        let patient = Task { await polls.wait(on: feed, at: head, seconds: 60) }
        #expect(await eventually { await feed.subscriberCount == 1 })
        #expect(await polls.wait(on: feed, at: head, seconds: 0.01) == .timeout)
        #expect(await eventually { await feed.subscriberCount == 1 })
        polls.shutDown()
        #expect(await patient.value == .shutdown)
        #expect(await polls.wait(on: feed, at: head, seconds: 60) == .shutdown, "none waits once shut down")
    }

    @Test func aDeletedFeedWakesItsReaders() async throws {
        let feed = try await Self.feed()
        let polls = LogPolls()
        let head = await Self.head(feed)
        let reader = Task { await polls.wait(on: feed, at: head, seconds: 60) }
        #expect(await eventually { await feed.subscriberCount == 1 })
        _ = try await feed.delete()
        #expect(await reader.value == .deleted)
        #expect(await polls.wait(on: feed, at: head, seconds: 60) == .deleted)
    }
}

/// Snapshots of `n` items, for the log tests.
enum FeedLogReadSnapshots {
    static func snapshot(_ items: Int) throws -> WireSnapshot {
        let list = (0..<items).map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",")
        return try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","model":null,"items":[\#(list)]}]}"#.utf8))
    }
}
