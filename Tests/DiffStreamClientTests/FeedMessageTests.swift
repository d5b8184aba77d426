import DiffStream
import DiffStreamJSON
import Testing
@testable import DiffStreamClient

struct FeedMessageTests {
    /// A batch's models are kept exactly as the server wrote them, also numbers no `Double` holds.
    @Test func batchModelsAreExact() throws {
        let data = #"{"feed":"n","from":1,"version":2,"ops":[{"op":"insert","item":{"id":"i","kind":"k","model":[1e+400,1.23456789012345678901234e+23]},"section":"s","before":null},{"op":"update","item":"j","kind":"k","model":{"a":12345678901234567890}},{"op":"insertSection","section":{"id":"t","model":{"b":1e+400}},"before":null},{"op":"updateSection","section":"s","model":-1e-400},{"op":"delete","item":"x"}]}"#
        guard case .batch(_, _, _, _, let batch, _) = try FeedMessage.decode(SSEEvent(type: "batch", data: data), defaultFeed: nil) else {
            Issue.record("not a batch"); return
        }
        let models: [String] = batch.operations.compactMap {
            switch $0 {
            case .insert(let item, _, _), .update(let item): item.model.description
            case .insertSection(let section, _), .updateSection(let section): section.model.description
            default: nil
            }
        }
        #expect(models == ["[1e+400,1.23456789012345678901234e+23]", #"{"a":12345678901234567890}"#, #"{"b":1e+400}"#, "-1e-400"])
    }

    /// What a message says, to compare in tables.
    static func summary(_ message: FeedMessage) -> String {
        switch message {
        case .snapshot(let feed, let history, let version, let snapshot, let id): "snapshot \(feed) \(history ?? "-") \(version) \(snapshot.sectionIDs.map(\.string).joined(separator: ",")) \(id)"
        case .batch(let feed, let history, let from, let version, let batch, let id): "batch \(feed) \(history ?? "-") \(from)→\(version) \(batch.counts) \(id)"
        case .deleted(let feed): "deleted \(feed)"
        case .refused(let feed, let kind, let error, let detail): "refused \(feed) \(kind) \(error) | \(detail)"
        case .unavailable(let feed, let detail): "unavailable \(feed) \(detail)"
        case .available(let feed): "available \(feed)"
        case .unknown(let type): "unknown \(type)"
        }
    }

    /// Each event kind the client handles, read in one pass: members of the wrong type are left out, a
    /// single-feed stream's feed stands in for a missing one, and unreadable data of an event without a
    /// body reads as no members (docs/protocol.md, "The event stream").
    @Test(arguments: [
        ("snapshot", #"{"feed":"home","history":"h","version":7,"sections":[{"id":"s"}]}"#, nil, "snapshot home h 7 s ds1.h.7"),
        ("snapshot", #"{"sections":[],"version":7.0,"history":5}"#, "d", "snapshot d - 7  ds1.h.7"),
        ("batch", #"{"feed":"home","history":"h","from":6,"version":7,"ops":[{"op":"delete","item":"i"}]}"#, nil, "batch home h 6→7 delete=1 ds1.h.7"),
        ("batch", #"{"ops":[],"from":6,"version":7,"feed":null}"#, "d", "batch d - 6→7  ds1.h.7"),
        ("deleted", #"{"feed":"a"}"#, nil, "deleted a"), ("deleted", "not JSON", "d", "deleted d"), ("deleted", #"{"feed":5}"#, "d", "deleted d"),
        ("notfound", #"{"feed":"x","error":"not found","detail":"no feed named x"}"#, nil, "refused x notFound not found | no feed named x"),
        ("forbidden", #"{"feed":"x","ops":"ignored"}"#, nil, "refused x forbidden forbidden | "),
        ("unauthorized", #"{"feed":"x","error":"token expired","detail":"reconnect"}"#, "d", "refused x unauthorized token expired | reconnect"),
        ("unavailable", #"{"feed":"x","error":"redis unavailable"}"#, nil, "unavailable x redis unavailable"),
        ("unavailable", #"{"feed":"x","detail":"lost","error":"e"}"#, nil, "unavailable x lost"),
        ("available", #"{"feed":"x"}"#, "d", "available x"), ("available", "[]", "d", "available d"),
        ("message", "anything", nil, "unknown message"),
    ] as [(String, String, String?, String)])
    func eventsAreRead(type: String, data: String, defaultFeed: String?, expected: String) throws {
        let message = try FeedMessage.decode(SSEEvent(type: type, data: data, lastEventID: "ds1.h.7"), defaultFeed: defaultFeed)
        #expect(Self.summary(message) == expected)
    }

    /// Why an event is unreadable, in the order the client checks: malformed JSON anywhere, then the
    /// feed, then the position, then the body's first problem in document order.
    @Test(arguments: [
        ("batch", #"{"from":1,"version":2,"ops":[1]}"#, "no feed"),
        ("batch", #"{"feed":"a","ops":[1],"version":2}"#, "no from or version"),
        ("batch", #"{"feed":"a","from":1,"version":2.5,"ops":[]}"#, "no from or version"),
        ("batch", #"{"feed":"a","from":1,"version":2,"ops":[{"op":"delete","item":1},{"op":"nope"}]}"#, "ops[0].item: expected a string"),
        ("batch", #"{"feed":"a","from":1,"version":2}"#, "ops: expected an array"),
        ("batch", #"{"feed":"a","from":1,"version":2,"ops":[{"op":"nope"}],"x":01}"#, "invalid JSON at byte 60: leading zeros are not allowed"),
        ("batch", #"{"feed":"a","from":1,"version":2,"ops":[]"#, "invalid JSON at byte 41: expected ',' or '}'"),
        ("batch", #"{"feed":"a","feed":"b","from":1,"version":2,"ops":[]}"#, "invalid JSON at byte 12: duplicate key \"feed\""),
        ("snapshot", #"{"version":1,"sections":[5]}"#, "no feed"),
        ("snapshot", #"{"feed":"a","sections":[5]}"#, "no version"),
        ("snapshot", #"{"feed":"a","version":1,"sections":[{"id":"s"},{"id":"s"}]}"#, "duplicate section id 's'"),
        ("snapshot", #"{"feed":"a","version":1,"sections":[{"id":1}],"x":[}"#, "invalid JSON at byte 51: unexpected character"),
        ("unauthorized", "{}", "no feed"),
    ] as [(String, String, String)])
    func unreadableEvents(type: String, data: String, reason: String) {
        #expect {
            _ = try FeedMessage.decode(SSEEvent(type: type, data: data), defaultFeed: nil)
        } throws: { error in
            let description = (error as? FeedMessage.DecodeError)?.reason ?? "\(error)"
            return description.contains(reason)
        }
    }
}
