@testable import HTTPCore
import Testing

struct SSEStreamWriterTests {
    let heartbeat = EventPayload(ServerSentEvent.comment("heartbeat"))
    let event = EventPayload(ServerSentEvent.encode(event: "batch", id: "1", data: Array("{}".utf8)))

    @Test(arguments: [0.5, 1.0, 15.0])
    func aHeartbeatIsDueExactlyOneIntervalAfterTheLastWrite(interval: Double) {
        var writer = SSEStreamWriter(gzip: false, heartbeat: interval, bufferLimit: 1 << 20, now: 100)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 100 + interval * 0.99) == nil)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 100 + interval) == heartbeat.bytes)
        // The next one counts from this heartbeat, not from a global sweep.
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 100 + interval * 1.5) == nil)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 100 + interval * 2) == heartbeat.bytes)
    }

    @Test func anEventPushesTheNextHeartbeatBack() {
        var writer = SSEStreamWriter(gzip: false, heartbeat: 1, bufferLimit: 1 << 20, now: 0)
        #expect(writer.event(event, queued: 0, now: 0.8) == .write(event.bytes))
        #expect(writer.nextHeartbeat == 1.8)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 1.0) == nil)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 1.8) != nil)
    }

    @Test func streamsKeepTheirOwnDeadlines() {
        // Two streams opened 0.3 s apart, checked by a 0.1 s tick: each gets its heartbeat within one
        // tick of its own deadline, never 1.5 intervals later.
        var first = SSEStreamWriter(gzip: false, heartbeat: 1, bufferLimit: 1 << 20, now: 0)
        var second = SSEStreamWriter(gzip: false, heartbeat: 1, bufferLimit: 1 << 20, now: 0.3)
        var sent: [[Double]] = [[], []]
        for step in 1...50 {
            let now = Double(step) / 10
            if first.heartbeatIfDue(heartbeat, queued: 0, now: now) != nil { sent[0].append(now) }
            if second.heartbeatIfDue(heartbeat, queued: 0, now: now) != nil { sent[1].append(now) }
        }
        for times in sent {
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            #expect(!gaps.isEmpty && gaps.allSatisfy { $0 <= 1.1 + 1e-9 }, "gaps \(gaps)")
        }
        #expect(sent[0].first.map { abs($0 - 1.0) < 1e-9 } == true)
        #expect(sent[1].first.map { abs($0 - 1.3) < 1e-9 } == true)
    }

    @Test func overBudgetPausesUntilResumed() {
        var writer = SSEStreamWriter(gzip: false, heartbeat: 15, bufferLimit: 100, now: 0)
        #expect(writer.event(event, queued: 100 - event.bytes.count, now: 0) == .write(event.bytes))
        #expect(writer.event(event, queued: 100, now: 0) == .overflowed)
        #expect(writer.isPaused)
        #expect(writer.event(event, queued: 0, now: 1) == .paused)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 100) == nil, "no heartbeat while paused")
        #expect(writer.resume(with: event, now: 2) == event.bytes)
        #expect(writer.event(event, queued: 0, now: 3) == .write(event.bytes))
    }

    /// A heartbeat over the budget is skipped, never a pause (only a counted event pauses a stream).
    @Test func aHeartbeatOverTheBudgetIsSkippedNotAPause() {
        var writer = SSEStreamWriter(gzip: false, heartbeat: 1, bufferLimit: 10, now: 0)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 9, now: 5) == nil)
        #expect(!writer.isPaused)
        #expect(writer.heartbeatIfDue(heartbeat, queued: 0, now: 5) == heartbeat.bytes)
    }

    /// A stream that fell behind still ends with its last event (why it ends), then nothing.
    @Test func aPausedStreamEndsWithItsFinalEvent() {
        var writer = SSEStreamWriter(gzip: false, heartbeat: 15, bufferLimit: 10, now: 0)
        #expect(writer.event(event, queued: 5, now: 0) == .overflowed)
        #expect(writer.event(event, queued: 5, now: 0) == .paused)
        let deleted = EventPayload(ServerSentEvent.encode(event: "deleted", id: nil, data: Array("{}".utf8)))
        #expect(writer.end(with: deleted, now: 1) == deleted.bytes)
        #expect(writer.isEnded && writer.end(with: deleted, now: 2).isEmpty)
        #expect(writer.event(event, queued: 0, now: 3) == .paused)
    }

    @Test func anEventLargerThanTheBudgetGoesOutWhenNothingIsQueued() {
        var writer = SSEStreamWriter(gzip: false, heartbeat: 15, bufferLimit: 4, now: 0)
        #expect(writer.event(event, queued: 0, now: 0) == .write(event.bytes))
    }

    @Test func gzipStreamDecodesToTheEventsInOrder() {
        var writer = SSEStreamWriter(gzip: true, heartbeat: 1, bufferLimit: 1 << 20, now: 0)
        var body = writer.opening()
        let events = (0..<5).map { EventPayload(ServerSentEvent.encode(event: "batch", id: "\($0)", data: Array("{\"n\":\($0)}".utf8))) }
        var expected: [UInt8] = []
        for (index, payload) in events.enumerated() {
            guard case .write(let bytes) = writer.event(payload, queued: 0, now: Double(index) / 10) else {
                Issue.record("event \(index) not written")
                return
            }
            body += bytes
            expected += payload.bytes
        }
        if let bytes = writer.heartbeatIfDue(heartbeat, queued: 0, now: 10) {
            body += bytes
            expected += heartbeat.bytes
        }
        body += writer.end()
        #expect(Gzip.decompress(body) == expected)
        #expect(writer.end().isEmpty, "the trailer is written once")
        #expect(writer.event(event, queued: 0, now: 11) == .paused, "nothing after the end")
    }
}
