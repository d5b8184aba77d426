import DiffStreamJSON
import FeedStorage
import Foundation
@testable import FeedCore
import HTTPCore
import Testing
import TestSupport

/// The batch and snapshot events are framed in the buffer their JSON is written in; they must be exactly
/// what the general SSE encoder makes of the same data.
struct FeedEventsTests {
    /// A document of up to six items whose titles hold line breaks, quotes, control bytes and non-ASCII
    /// text (the JSON escapes them), and models pretty-printed with newlines between tokens (read into
    /// canonical JSON without them).
    static func document(_ random: inout SeededGenerator) -> [UInt8] {
        let pieces = ["a", "line\nbreak", "cr\rlf\r\n", "quote\"", "tab\t", "\u{1}", "é", "🙂", " ", "\\", "data: x", "id: y"]
        let items = (0..<Int.random(in: 0...6, using: &random)).map { index in
            let title = (0..<Int.random(in: 0...4, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let escaped = String(decoding: try! JSONSerialization.data(withJSONObject: [title], options: [.fragmentsAllowed]), as: UTF8.self).dropFirst().dropLast()
            return "{\"id\":\"i\(index)\",\"kind\":\"k\",\"model\":{\n  \"title\": \(escaped),\r\n  \"n\": \(Int.random(in: 0...9, using: &random))\n}}"
        }
        return Array("{\"sections\":[{\"id\":\"s\",\"model\":{\n\"t\": 1\n},\"items\":[\(items.joined(separator: ","))]}]}".utf8)
    }

    @Test(arguments: 0..<40)
    func eventsAreWhatTheGeneralEncoderMakesOfTheirData(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let old = try WireCodec.decodeSnapshot(Self.document(&random)), new = try WireCodec.decodeSnapshot(Self.document(&random))
        let feed = ["f", "feed\nname", "übung", "a\"b"].randomElement(using: &random)!
        let id = EventID(history: RandomID.history(), version: Int.random(in: 1...1_000_000, using: &random))
        let batch = WireSnapshot.diff(from: old, to: new)

        let event = FeedEvents.batchEvent(feed: feed, id: id, batch: batch)
        let data = try #require(Self.singleDataLine(of: event))
        #expect(event == ServerSentEvent.encode(event: "batch", id: id.description, data: data))
        let object = try #require(JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
        #expect(object["feed"] as? String == feed && object["version"] as? Int == id.version && object["from"] as? Int == id.version - 1)
        #expect((object["ops"] as? [Any])?.count == batch.operations.count)

        let snapshot = FeedEvents.snapshotEvent(feed: feed, id: id, snapshot: new)
        let json = FeedEvents.snapshotJSON(feed: feed, history: id.history, version: id.version, snapshot: new)
        #expect(snapshot == ServerSentEvent.encode(event: "snapshot", id: id.description, data: json))
    }

    @Test(arguments: ["0123456789abcdef", "ab\ncd", "cr\rlf", "nul\u{0}x"])
    func anIDWithALineBreakOrNULIsEncodedTheGeneralWay(history: String) throws {
        let id = EventID(history: history, version: 12)
        let old = try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"k","model":1}]}]}"#.utf8))
        let new = try WireCodec.decodeSnapshot(Array(#"{"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"k","model":2}]}]}"#.utf8))
        let batch = WireSnapshot.diff(from: old, to: new)
        var data = JSONWriter()
        data.raw("{\"feed\":\"f\",\"history\":")
        data.write(history)
        data.raw(",\"from\":11,\"version\":12,\"ops\":")
        WireCodec.writeOperations(batch.operations, into: &data)
        data.byte(UInt8(ascii: "}"))
        #expect(FeedEvents.batchEvent(feed: "f", id: id, batch: batch) == ServerSentEvent.encode(event: "batch", id: id.description, data: data.bytes))
    }

    /// The data of an event with exactly one `data:` line, or nil.
    static func singleDataLine(of event: [UInt8]) -> [UInt8]? {
        let lines = event.split(separator: 0x0A, omittingEmptySubsequences: false)
        let data = lines.filter { $0.starts(with: Array("data: ".utf8)) }
        guard data.count == 1, !event.contains(0x0D) else { return nil }
        return Array(data[0].dropFirst(6))
    }
}
