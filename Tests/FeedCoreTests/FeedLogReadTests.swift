import DiffStreamJSON
import FeedCore
import Testing
import TestSupport

/// What a read by position finds in a feed (``Feed/logRead(after:end:)``): the snapshot event's data
/// at the start, the window's batch data after a position, or why to start over.
struct FeedLogReadTests {
    static func snapshot(_ items: Int) throws -> WireSnapshot {
        let list = (0..<items).map { #"{"id":"\#($0)","kind":"k","model":null}"# }.joined(separator: ",")
        return try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","model":null,"items":[\#(list)]}]}"#.utf8))
    }

    static func feed(version: Int, replay: Int = 8) async throws -> Feed {
        let feed = Feed(name: "f", replayLimit: replay, transport: MemoryBroadcaster(), metrics: FeedMetrics(), store: nil)
        for version in 1...version { try await feed.publish(snapshot(version)) }
        return feed
    }

    static func json(_ bytes: [UInt8]) throws -> JSONValue { try JSONParser.parse(bytes) }

    static let all: @Sendable (Int, Int) -> Int = { _, head in head }

    @Test func theStartIsTheSnapshotEventsData() async throws {
        let feed = try await Self.feed(version: 3)
        let history = await feed.history
        guard case .start(let id, let data) = await feed.logRead(after: nil, end: Self.all) else { Issue.record("not a start"); return }
        #expect(id == EventID(history: history, version: 3))
        let event = EventFields.parse(await feed.currentSnapshotPayload().bytes)[0]
        #expect(data == event.data)
        #expect(try Self.json(data)["version"] == .number(3))
    }

    @Test func batchesAfterAPositionUpToTheEnd() async throws {
        let feed = try await Self.feed(version: 6)
        let history = await feed.history
        let read = await feed.logRead(after: EventID(history: history, version: 2)) { after, head in
            #expect((after, head) == (2, 6))
            return 4
        }
        guard case .batches(let readHistory, let head, let batches) = read else { Issue.record("not batches: \(read)"); return }
        #expect(readHistory == history && head == 6)
        #expect(try batches.map { try Self.json($0)["version"]?.numberValue } == [3, 4])
        #expect(try batches.map { try Self.json($0)["from"]?.numberValue } == [2, 3])
    }

    @Test func atTheHeadThereIsNothing() async throws {
        let feed = try await Self.feed(version: 3)
        let history = await feed.history
        #expect(await feed.logRead(after: EventID(history: history, version: 3), end: Self.all) == .batches(history: history, head: 3, batches: []))
    }

    @Test(arguments: [("another history", 2), ("beyond the head", 9), ("older than the window", 1)])
    func positionsThatStartOver(_ case_: String, _ version: Int) async throws {
        let feed = try await Self.feed(version: 12, replay: 4)
        let history = case_ == "another history" ? "ffffffffffffffff" : await feed.history
        guard case .startOver = await feed.logRead(after: EventID(history: history, version: case_ == "beyond the head" ? 13 : version), end: Self.all) else {
            Issue.record("\(case_): not start over"); return
        }
    }

    @Test func withoutAWindowOnlyTheHeadIsUpToDate() async throws {
        let feed = try await Self.feed(version: 3, replay: 0)
        let history = await feed.history
        #expect(await feed.logRead(after: EventID(history: history, version: 3), end: Self.all) == .batches(history: history, head: 3, batches: []))
        guard case .startOver = await feed.logRead(after: EventID(history: history, version: 2), end: Self.all) else { Issue.record("not start over"); return }
    }

    @Test func aDeletedFeedIsMissing() async throws {
        let feed = try await Self.feed(version: 2)
        _ = try await feed.delete()
        #expect(await feed.logRead(after: nil, end: Self.all) == .missing)
    }
}
