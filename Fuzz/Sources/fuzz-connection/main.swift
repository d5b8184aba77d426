@testable import HTTPCore

/// Fuzzes `ConnectionMachine` with random sequences of events: bytes (fragments of valid and broken
/// requests, or raw input), partial writes, the handler's responses (plain, closing, HEAD-able, event
/// streams), stream events, resyncs, ends, clock ticks, shutdown, TLS progress and peer closes.
///
/// Invariants checked after every event:
/// - nothing is written, dispatched or closed after the close (and the close comes once);
/// - at most one request is being handled at a time, and responses go out in request order (each
///   carries `X-Seq: n`, its request's position; the sequence written must be 0, 1, 2, …);
/// - the machine's count of queued bytes equals what it asked to write minus what was reported written;
/// - a response for no dispatched request writes nothing;
/// - a tick before the machine's `nextDeadline` (or when it has none) does nothing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConnection(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var input = Input(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    var settings = ConnectionMachine.Settings()
    settings.limits.maxRequestLine = 128
    settings.limits.maxHeaderBytes = 256
    settings.limits.maxBodyBytes = 128
    settings.streamBufferLimit = 256
    settings.heartbeat = 1
    var check = Checker(machine: ConnectionMachine(id: 1, remote: "fuzz", settings: settings, tls: input.next() & 1 == 1, now: 0))
    var now = 0.0
    let date = "Thu, 01 Jan 1970 00:00:00 GMT"
    while !input.isEmpty {
        let op = input.next()
        switch op % 12 {
        case 0, 1:
            let bytes = fragments[Int(input.next()) % fragments.count]
            check.apply(check.machine.received(Array(bytes.utf8), now: now, date: date))
        case 2:
            check.apply(check.machine.received(input.take(Int(input.next() % 64)), now: now, date: date))
        case 3:
            let count = min(check.unsent, Int(input.next()) * 4 + 1)
            check.unsent -= count
            check.apply(check.machine.wrote(count, now: now))
        case 4:
            let count = check.unsent
            check.unsent = 0
            check.apply(check.machine.wrote(count, now: now))
        case 5:
            check.respond(kind: input.next(), now: now, date: date)
        case 6:
            // An event's bytes; "X" is mapped to "x" so an event never looks like a response's X-Seq.
            let event = input.take(Int(input.next() % 200)).map { $0 == UInt8(ascii: "X") ? UInt8(ascii: "x") : $0 }
            check.apply(check.machine.send(EventPayload(event), now: now))
        case 7:
            check.apply(check.machine.resume(with: EventPayload("data: snapshot\n\n"), now: now))
        case 8:
            let deadline = check.machine.nextDeadline
            now += Double(input.next()) / 8
            let actions = check.machine.tick(now: now, date: date)
            if !actions.isEmpty, deadline.map({ now < $0 }) ?? true {
                fatalError("a tick at \(now) acted before the next deadline \(String(describing: deadline)): \(actions)")
            }
            check.apply(actions)
        case 9:
            switch input.next() % 4 {
            case 0: check.apply(check.machine.beginShutdown(now: now))
            case 1: check.apply(check.machine.endStream(now: now))
            case 2: check.apply(check.machine.handshakeDone(now: now))
            default: check.apply(check.machine.peerClosed())
            }
        default:
            now += 0.05
        }
    }
    return 0
}

let fragments = [
    "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n", "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "GET /old HTTP/1.0\r\n\r\n", "PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody",
    "PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", "abc",
    "POST /k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "GET /events HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n",
    "GET / HTTP/1.1\r\n", "Host: x\r\n", "\r\n", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", "BREW / HTTP/1.1\r\nHost: x\r\n\r\n",
]

struct Input {
    var bytes: [UInt8]
    var position = 0
    var isEmpty: Bool { position >= bytes.count }
    mutating func next() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }
    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, position + count)
        defer { position = end }
        return Array(bytes[position..<end])
    }
}

struct Checker {
    var machine: ConnectionMachine
    var closed = false
    var unsent = 0
    var dispatched = 0
    var answered = 0
    var outstanding: RequestInfo?
    var written: [UInt8] = []
    var scanned = 0
    var seen = 0

    mutating func apply(_ actions: [ConnectionMachine.Action]) {
        for action in actions {
            if closed { fatalError("\(action) after the close") }
            switch action {
            case .write(let bytes):
                if bytes.isEmpty { fatalError("an empty write") }
                unsent += bytes.count
                written += bytes
            case .dispatch(_, let info):
                if outstanding != nil { fatalError("a second request dispatched while one is being handled") }
                outstanding = info
                dispatched += 1
            case .close:
                closed = true
                unsent = 0
            case .openStream, .streamDrained, .shutdownWrite, .log, .logRequest, .count:
                break
            }
        }
        if closed != (machine.phase == .closed) { fatalError("close action and phase disagree: \(machine.phase)") }
        if machine.queued != unsent { fatalError("queued \(machine.queued) but \(unsent) unsent") }
        checkOrder()
    }

    mutating func respond(kind: UInt8, now: Double, date: String) {
        guard let info = outstanding else {
            // No request is waiting: a stray response must do nothing.
            let actions = machine.respond(PreparedResponse.prepare(HTTPResponse(status: .ok), for: .unknown(at: now), compressAbove: 1024), now: now, date: date)
            if !actions.isEmpty { fatalError("a response with no request produced \(actions)") }
            return
        }
        outstanding = nil
        let seq: HTTPHeaders = ["X-Seq": String(answered)]
        answered += 1
        var response: HTTPResponse
        switch kind % 5 {
        case 0: response = HTTPResponse(status: .ok, headers: seq, body: Array("hello".utf8))
        case 1:
            var headers = seq
            headers.add("Connection", "close")
            response = HTTPResponse(status: .ok, headers: headers, body: [])
        case 2: response = HTTPResponse(status: .notModified, headers: seq)
        case 3:
            var headers = seq
            headers.add("Content-Type", "text/plain")
            response = HTTPResponse(status: .ok, headers: headers, body: Array(repeating: UInt8(ascii: "z"), count: 2000))
        default: response = HTTPResponse(status: .ok, headers: seq) { _ in }
        }
        apply(machine.respond(PreparedResponse.prepare(response, for: info, compressAbove: 1024), now: now, date: date))
    }

    /// Every `X-Seq: n` written so far must count 0, 1, 2, … in order. (A head is one write, so a
    /// marker is never split between two; scanning resumes where it stopped.)
    mutating func checkOrder() {
        let marker = Array("X-Seq: ".utf8)
        var index = scanned
        var expected = seen
        defer {
            scanned = index
            seen = expected
        }
        while index + marker.count < written.count {
            if written[index..<index + marker.count].elementsEqual(marker) {
                var end = index + marker.count
                while end < written.count, written[end] != 0x0D { end += 1 }
                let value = Int(String(decoding: written[(index + marker.count)..<end], as: UTF8.self))
                if value != expected { fatalError("response \(String(describing: value)) written where \(expected) was due") }
                expected += 1
                index = end
            } else {
                index += 1
            }
        }
        if expected > answered { fatalError("more responses written than answered") }
    }
}
