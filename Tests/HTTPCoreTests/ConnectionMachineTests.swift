import Foundation
@testable import HTTPCore
import Logging
import Testing
import TestSupport

/// Drives a ``ConnectionMachine`` like the socket executor would, with a clock the test sets.
struct MachineDriver {
    static let date = "Mon, 23 Nov 2026 07:00:00 GMT"
    var machine: ConnectionMachine
    var now: Double = 1000
    /// Every action so far, in order.
    var actions: [ConnectionMachine.Action] = []
    /// Bytes written and not yet "sent" by ``flush()``.
    var unsent: [UInt8] = []
    /// Everything written, as text.
    var written = ""

    init(tls: Bool = false, settings: ConnectionMachine.Settings = ConnectionMachine.Settings()) {
        machine = ConnectionMachine(id: 7, remote: "192.0.2.1:5000", settings: settings, tls: tls, now: 1000)
    }

    mutating func record(_ new: [ConnectionMachine.Action]) {
        actions += new
        for case .write(let bytes) in new {
            unsent += bytes
            written += String(decoding: bytes, as: UTF8.self)
        }
    }

    mutating func receive(_ text: String) { record(machine.received(Array(text.utf8), now: now, date: Self.date)) }
    /// The socket took everything queued.
    mutating func flush() {
        let count = unsent.count
        unsent = []
        record(machine.wrote(count, now: now))
    }
    mutating func advance(to time: Double) {
        now = time
        record(machine.tick(now: now, date: Self.date))
    }
    mutating func respond(_ response: HTTPResponse) {
        guard let info = lastDispatch?.info else {
            Issue.record("nothing was dispatched")
            return
        }
        record(machine.respond(PreparedResponse.prepare(response, for: info, compressAbove: 1024), now: now, date: Self.date))
    }

    var dispatched: [(request: HTTPRequest, info: RequestInfo)] {
        actions.compactMap { if case .dispatch(let request, let info) = $0 { (request, info) } else { nil } }
    }
    var lastDispatch: (request: HTTPRequest, info: RequestInfo)? { dispatched.last }
    var closeReason: String? {
        actions.lazy.compactMap { if case .close(let reason) = $0 { reason } else { nil } }.first
    }
    var shutWrite: Bool { actions.contains(.shutdownWrite) }
    /// Every log line asked for: message and metadata.
    var logLines: [(message: String, metadata: Logger.Metadata)] {
        actions.compactMap { action in
            switch action {
            case .log(_, let message, let metadata): (message, metadata)
            case .logRequest(let line): (line.message, line.metadata)
            default: nil
            }
        }
    }
    var statusLines: [String] {
        written.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }
    }
}

func text(_ body: String, status: HTTPStatus = .ok, headers: HTTPHeaders = ["Content-Type": "text/plain"]) -> HTTPResponse {
    HTTPResponse(status: status, headers: headers, body: Array(body.utf8))
}

let getRequest = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"

struct ConnectionMachineTests {
    @Test func keepAliveAnswersThenWaitsForTheNextRequest() {
        var driver = MachineDriver()
        driver.receive(getRequest)
        #expect(driver.machine.phase == .processing)
        #expect(driver.lastDispatch?.request.path == "/a")
        driver.respond(text("hi"))
        #expect(driver.written.hasPrefix("HTTP/1.1 200 OK\r\nDate: \(MachineDriver.date)\r\nServer: diffstream\r\n"))
        #expect(driver.written.contains("Content-Length: 2\r\n") && driver.written.contains("Connection: keep-alive\r\n\r\nhi"))
        #expect(driver.machine.phase == .awaitingRequest && driver.machine.wantsInput)
        driver.flush()
        #expect(driver.closeReason == nil && !driver.shutWrite)
    }

    @Test func connectionCloseAndHTTP10EndWithALingeringClose() {
        for request in ["GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /a HTTP/1.0\r\n\r\n"] {
            var driver = MachineDriver()
            driver.receive(request)
            driver.respond(text("bye"))
            #expect(driver.written.contains("Connection: close\r\n"))
            #expect(driver.machine.phase == .closing && !driver.shutWrite, "the write side is shut only after the response is written")
            driver.flush()
            #expect(driver.shutWrite && driver.machine.phase == .draining && driver.machine.wantsInput)
            driver.receive("ignored")  // read and discarded while lingering
            #expect(driver.dispatched.count == 1)
            driver.advance(to: 1001.9)
            #expect(driver.closeReason == nil)
            driver.advance(to: 1002.1)
            #expect(driver.closeReason == "linger done")
        }
    }

    @Test func pipelinedRequestsAreAnsweredOneAtATimeInOrder() {
        var driver = MachineDriver()
        driver.receive("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(driver.dispatched.map(\.request.path) == ["/1"], "the second waits for the first's answer")
        driver.respond(text("one"))
        #expect(driver.dispatched.map(\.request.path) == ["/1", "/2"])
        driver.respond(text("two"))
        driver.respond(text("three"))
        #expect(driver.dispatched.map(\.request.path) == ["/1", "/2", "/3"])
        let bodies = driver.written.components(separatedBy: "\r\n\r\n").dropFirst().map { $0.prefix(5) }
        #expect(bodies.map(String.init) == ["oneHT", "twoHT", "three"])
    }

    @Test func headGetsTheHeadOfGetWithoutTheBody() {
        var driver = MachineDriver()
        driver.receive("HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(driver.lastDispatch?.request.method == "GET")
        #expect(driver.lastDispatch?.info.head == true)
        driver.respond(text("twelve bytes"))
        #expect(driver.written.hasSuffix("Content-Length: 12\r\nConnection: keep-alive\r\n\r\n"))
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() {
        var driver = MachineDriver()
        driver.receive("PUT /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
        #expect(driver.written == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(driver.dispatched.isEmpty)
        driver.receive("ok")
        #expect(driver.lastDispatch?.request.body == Array("ok".utf8))
    }

    @Test func aBadRequestIsAnsweredAndTheRestIsNeverParsed() {
        var driver = MachineDriver()
        driver.receive("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" + getRequest)
        #expect(driver.statusLines == ["HTTP/1.1 400 Bad Request"])
        #expect(driver.written.contains("Connection: close\r\n") && driver.dispatched.isEmpty)
        #expect(driver.actions.contains(.count(.badRequest)))
        driver.flush()
        #expect(driver.shutWrite)
    }

    /// A body over the limit is refused once the head is read: its log line has the head's method and
    /// path (not `- - 413`), never the query string.
    @Test func anOversizedBodyIsLoggedWithItsMethodAndPath() {
        var settings = ConnectionMachine.Settings()
        settings.limits.maxBodyBytes = 4
        var driver = MachineDriver(settings: settings)
        driver.receive("PUT /feeds/big?token=secret HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        #expect(driver.statusLines == ["HTTP/1.1 413 Content Too Large"])
        #expect(driver.dispatched.isEmpty)
        let line = driver.actions.lazy.compactMap { if case .logRequest(let line) = $0 { line } else { nil } }.first
        #expect(line?.method == "PUT" && line?.path == "/feeds/big" && line?.status == 413)
        #expect(line?.message.hasPrefix("PUT /feeds/big 413 ") == true)
    }

    /// A request refused in its head has no method or path to show.
    @Test func aHeadRefusedIsLoggedWithoutMethodOrPath() {
        var driver = MachineDriver()
        driver.receive("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n")
        #expect(driver.logLines.map(\.message).first?.hasPrefix("- - 400 ") == true)
    }

    @Test func theHeaderTimeoutClosesASlowHead() {
        var settings = ConnectionMachine.Settings()
        settings.limits.headerTimeout = 2
        var driver = MachineDriver(settings: settings)
        driver.receive("GET / HTTP/1.1\r\n")
        driver.advance(to: 1001.5)
        driver.receive("X-A: 1\r\n")  // trickling in does not reset the clock
        driver.advance(to: 1002.01)
        #expect(driver.closeReason == "request head timeout")
        #expect(driver.actions.contains(.count(.timeout)))
    }

    @Test func theBodyTimeoutAnswers408() {
        var settings = ConnectionMachine.Settings()
        settings.limits.bodyTimeout = 3
        var driver = MachineDriver(settings: settings)
        driver.receive("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf")
        driver.advance(to: 1002.9)
        #expect(driver.written.isEmpty)
        driver.advance(to: 1003.1)
        #expect(driver.statusLines == ["HTTP/1.1 408 Request Timeout"])
        #expect(driver.logLines.map(\.message).first?.hasPrefix("PUT /a 408 ") == true)  // the head was read
        driver.flush()
        #expect(driver.shutWrite)
    }

    @Test func theIdleTimeoutClosesAQuietKeepAliveConnection() {
        var settings = ConnectionMachine.Settings()
        settings.limits.idleTimeout = 5
        var driver = MachineDriver(settings: settings)
        driver.receive(getRequest)
        driver.respond(text("x"))
        driver.flush()
        driver.advance(to: 1004.9)
        #expect(driver.closeReason == nil)
        driver.advance(to: 1005.1)
        #expect(driver.closeReason == "idle")
    }

    @Test func theHandshakeTimeoutClosesAStalledTLSConnection() {
        var driver = MachineDriver(tls: true)
        #expect(driver.machine.phase == .handshaking && !driver.machine.wantsInput)
        driver.advance(to: 1010.5)
        #expect(driver.closeReason == "tls handshake timeout")
        var done = MachineDriver(tls: true)
        done.record(done.machine.handshakeDone(now: 1001))
        done.advance(to: 1010.5)
        #expect(done.closeReason == nil && done.machine.phase == .awaitingRequest)
    }

    @Test func theWriteTimeoutDropsAResponseTheClientDoesNotRead() {
        var settings = ConnectionMachine.Settings()
        settings.limits.writeTimeout = 4
        var driver = MachineDriver(settings: settings)
        driver.receive(getRequest)
        driver.respond(text(String(repeating: "x", count: 100)))
        driver.record(driver.machine.wrote(10, now: 1002))  // some progress
        driver.advance(to: 1005.9)
        #expect(driver.closeReason == nil, "4 s since the last progress have not passed")
        driver.advance(to: 1006.1)
        #expect(driver.closeReason == "write timeout")
    }

    @Test func theRequestLineHasItsMetadataAndNeverTheQueryString() throws {
        var driver = MachineDriver()
        driver.receive("GET /feeds/a?token=secret-token-1 HTTP/1.1\r\nHost: x\r\n\r\n")
        var response = text("hi", status: .notFound)
        response.logMetadata = ["feed": "a"]
        driver.respond(response)
        let line = try #require(driver.logLines.last)
        #expect(line.message == "GET /feeds/a 404 2B 0ms")
        #expect(line.metadata == ["feed": "a", "method": "GET", "path": "/feeds/a", "status": "404", "bytes": "2", "ms": "0"])
        #expect(driver.logLines.allSatisfy { !$0.message.contains("secret") && !"\($0.metadata)".contains("secret") })
    }

    @Test func aStreamsConnectLineHasTheHandlersMetadata() throws {
        var driver = MachineDriver()
        driver.receive("GET /feeds/a/events?access_token=secret-token-1 HTTP/1.1\r\nHost: x\r\nLast-Event-ID: ds1.x.1\r\n\r\n")
        var response = HTTPResponse(headers: ["Content-Type": "text/event-stream"]) { _ in }
        response.logMetadata = ["feed": "a"]
        driver.respond(response)
        let line = try #require(driver.logLines.last)
        #expect(line.message == "sse connect #7 /feeds/a/events from 192.0.2.1:5000 last-event-id=ds1.x.1")
        #expect(line.metadata == ["feed": "a", "connection": "7", "path": "/feeds/a/events", "remote": "192.0.2.1:5000", "last_event_id": "ds1.x.1"])
        #expect(!"\(line)".contains("secret"))
    }

    @Test func aStreamGetsItsHeadEventsAndHeartbeats() {
        var settings = ConnectionMachine.Settings()
        settings.heartbeat = 1
        var driver = MachineDriver(settings: settings)
        driver.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        driver.respond(HTTPResponse(headers: ["Content-Type": "text/event-stream"]) { _ in })
        #expect(driver.actions.contains(.openStream) && driver.actions.contains(.count(.streamOpened)))
        #expect(driver.written.contains("Connection: close\r\n") && !driver.written.contains("Content-Length"))
        #expect(driver.machine.isStreaming)
        driver.flush()
        let event = EventPayload("data: 1\n\n")
        driver.record(driver.machine.send(event, now: 1000.5))
        #expect(driver.written.hasSuffix("data: 1\n\n"))
        driver.advance(to: 1001.4)
        #expect(!driver.written.hasSuffix(": heartbeat\n\n"))
        driver.advance(to: 1001.5)
        #expect(driver.written.hasSuffix(": heartbeat\n\n"))
    }

    @Test func overflowPausesThenResyncsOnceDrained() {
        var settings = ConnectionMachine.Settings()
        settings.streamBufferLimit = 64
        var driver = MachineDriver(settings: settings)
        driver.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        driver.respond(HTTPResponse { _ in })
        driver.flush()
        let event = EventPayload(String(repeating: "x", count: 40))
        driver.record(driver.machine.send(event, now: 1001))  // queued: 40
        driver.record(driver.machine.send(event, now: 1001))  // 80 > 64: overflow
        #expect(driver.actions.contains(.count(.streamOverflow)))
        driver.record(driver.machine.send(event, now: 1001))  // paused: dropped
        #expect(driver.written.components(separatedBy: String(repeating: "x", count: 40)).count == 2, "one event written")
        #expect(!driver.actions.contains(.streamDrained))
        driver.flush()
        #expect(driver.actions.contains(.streamDrained))
        driver.record(driver.machine.resume(with: EventPayload("snapshot"), now: 1002))
        #expect(driver.written.hasSuffix("snapshot"))
        driver.record(driver.machine.send(event, now: 1002))
        #expect(driver.written.hasSuffix(String(repeating: "x", count: 40)), "events flow again")
    }

    @Test func theFanOutPathDecidesExactlyAsSendDoes() {
        var settings = ConnectionMachine.Settings()
        settings.streamBufferLimit = 64
        var slow = MachineDriver(settings: settings), fast = MachineDriver(settings: settings)
        slow.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        fast.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        slow.respond(HTTPResponse { _ in })
        fast.respond(HTTPResponse { _ in })
        slow.flush()
        fast.flush()
        let event = EventPayload(String(repeating: "y", count: 40))
        var outcomes: [ConnectionMachine.SendOutcome] = []
        for _ in 0..<3 {  // written, overflowed, dropped
            slow.record(slow.machine.send(event, now: 1001))
            outcomes.append(fast.machine.sendEvent(event, now: 1001))
        }
        #expect(outcomes.count == 3)
        guard outcomes.count == 3 else { return }
        #expect(outcomes[0] == .write(event.bytes))
        if case .overflowed(let actions) = outcomes[1] { #expect(actions.contains(.count(.streamOverflow))) } else { Issue.record("no overflow: \(outcomes[1])") }
        #expect(outcomes[2] == .dropped)
        #expect(fast.machine.queued == slow.machine.queued, "both count the queued bytes the same way")
        // Once the socket took the bytes, both ask for a resync.
        #expect(slow.machine.wrote(40, now: 1002) == fast.machine.wrote(40, now: 1002))
    }

    @Test func anOpenStreamKeepsNoRequestBytes() {
        var driver = MachineDriver()
        driver.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\nGET /pipelined HTTP/1.1\r\n")
        #expect(driver.machine.parser.bufferedByteCount > 0)
        driver.respond(HTTPResponse { _ in })
        #expect(driver.machine.isStreaming)
        #expect(driver.machine.parser.bufferedByteCount == 0, "nothing more is parsed on a stream: its buffer is freed")
        driver.receive("more bytes")
        #expect(driver.dispatched.count == 1, "a stream reads and discards")
    }

    @Test func aStalledSubscriberIsDroppedByTheWriteTimeout() {
        var settings = ConnectionMachine.Settings()
        settings.limits.writeTimeout = 30
        var driver = MachineDriver(settings: settings)
        driver.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        driver.respond(HTTPResponse { _ in })
        driver.record(driver.machine.send(EventPayload("data: 1\n\n"), now: 1001))  // nothing ever flushed
        driver.advance(to: 1029.9)  // 30 s from the head, queued at 1000 and never written
        #expect(driver.closeReason == nil)
        driver.advance(to: 1030.1)
        #expect(driver.closeReason == "write timeout")
        driver.record(driver.machine.send(EventPayload("late"), now: 1032))
        #expect(!driver.written.contains("late"), "nothing written after close")
    }

    @Test(arguments: ["idle", "mid-request", "processing", "streaming", "handshaking"])
    func shutdown(from state: String) {
        var driver = MachineDriver(tls: state == "handshaking")
        switch state {
        case "mid-request": driver.receive("GET / HTTP/1.1\r\n")
        case "processing": driver.receive(getRequest)
        case "streaming":
            driver.receive("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            driver.respond(HTTPResponse { _ in })
            driver.flush()
        default: break
        }
        driver.record(driver.machine.beginShutdown(now: 1001))
        switch state {
        case "idle", "handshaking":
            #expect(driver.closeReason == "shutdown")
        case "streaming":
            #expect(driver.shutWrite, "the stream ends and the connection lingers")
        case "processing":
            #expect(driver.closeReason == nil)
            driver.respond(text("last"))
            #expect(driver.written.contains("Connection: close\r\n"), "the response in flight is the last")
        default:  // mid-request: it may finish, then the connection closes
            #expect(driver.closeReason == nil)
            driver.receive("Host: x\r\n\r\n")
            driver.respond(text("last"))
            #expect(driver.written.contains("Connection: close\r\n"))
        }
    }

    @Test func aRefusedConnectionGets503AndCloses() {
        var driver = MachineDriver()
        driver.record(driver.machine.refuse(.error(.serviceUnavailable, "service unavailable", detail: "full", headers: ["Connection": "close"]),
                                            now: 1000, date: MachineDriver.date))
        #expect(driver.statusLines == ["HTTP/1.1 503 Service Unavailable"])
        driver.flush()
        #expect(driver.shutWrite)
    }

    @Test func afterCloseNothingHappens() {
        var driver = MachineDriver()
        driver.receive(getRequest)
        driver.record(driver.machine.peerClosed())
        let count = driver.actions.count
        driver.respond(text("late"))
        driver.receive(getRequest)
        driver.advance(to: 5000)
        #expect(driver.actions.count == count)
    }
}

struct ResponseHeadTests {
    @Test func encodesStatusDateServerFieldsAndConnection() {
        let head = ResponseHead.encode(status: .notFound, headers: ["Content-Length": "0", "X-A": "1"], keepAlive: false, date: "D")
        #expect(String(decoding: head, as: UTF8.self)
            == "HTTP/1.1 404 Not Found\r\nDate: D\r\nServer: diffstream\r\nContent-Length: 0\r\nX-A: 1\r\nConnection: close\r\n\r\n")
    }

    @Test(arguments: [(HTTPStatus.ok, "200 OK"), (HTTPStatus(101, "Switching Protocols"), "101 Switching Protocols"),
                      (HTTPStatus(503, "Service Unavailable"), "503 Service Unavailable"), (HTTPStatus(7, "Odd"), "7 Odd"),
                      (HTTPStatus(1234, "Wide"), "1234 Wide")])
    func encodesTheStatusLineAndTheBodyAfterTheHead(status: HTTPStatus, line: String) {
        let body = Array("{\"version\":2}".utf8)
        let bytes = ResponseHead.encode(status: status, headers: ["Content-Type": "application/json"], keepAlive: true, date: "Fri", body: body)
        #expect(String(decoding: bytes, as: UTF8.self)
            == "HTTP/1.1 \(line)\r\nDate: Fri\r\nServer: diffstream\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n\r\n{\"version\":2}")
    }

    @Test(arguments: [("text/html; charset=utf-8", true), ("Application/JSON", true), ("APPLICATION/javascript", true), ("image/SVG+xml", true),
                      ("application/xml", true), ("image/png", false), ("", false), ("text", false), ("application/octet-stream", false),
                      ("application/jso", false)])
    func compressibleMediaTypesIgnoreCase(type: String, compressible: Bool) {
        #expect(PreparedResponse.isCompressible(type) == compressible)
    }

    @Test func preparingGzipsOnlyWhatIsWorthIt() {
        let info = RequestInfo(method: "GET", path: "/", start: 0, keepAlive: true, head: false, gzip: true)
        let big = PreparedResponse.prepare(text(String(repeating: "a", count: 2000)), for: info, compressAbove: 1024)
        #expect(big.headers["Content-Encoding"] == "gzip" && Gzip.decompress(big.body)?.count == 2000)
        #expect(big.headers["Content-Length"] == String(big.body.count) && big.headers["Vary"] == "Accept-Encoding")
        let small = PreparedResponse.prepare(text("tiny"), for: info, compressAbove: 1024)
        #expect(small.headers["Content-Encoding"] == nil && small.body == Array("tiny".utf8))
    }

    /// An event stream's events are deflated only when it is gzipped: a subscriber that did not ask
    /// for gzip (or a HEAD) makes no deflated copy of its events.
    @Test(arguments: [(true, false, true), (false, false, false), (true, true, false)])
    func anEventStreamIsGzippedOnlyForAClientThatTakesIt(gzip: Bool, head: Bool, gzipped: Bool) {
        let info = RequestInfo(method: head ? "HEAD" : "GET", path: "/feeds/a/events", start: 0, keepAlive: true, head: head, gzip: gzip)
        let prepared = PreparedResponse.prepare(HTTPResponse(status: .ok) { _ in }, for: info, compressAbove: 1024)
        #expect(prepared.gzipStream == gzipped)
        #expect((prepared.headers["Content-Encoding"] == "gzip") == gzipped)
    }

    // MARK: The next deadline (the loop ticks a connection only once it has come)

    @Test func theNextDeadlineFollowsThePhase() {
        var settings = ConnectionMachine.Settings()
        settings.heartbeat = 5
        let limits = settings.limits
        #expect(MachineDriver(tls: true, settings: settings).machine.nextDeadline == 1000 + limits.handshakeTimeout)
        var driver = MachineDriver(settings: settings)
        #expect(driver.machine.nextDeadline == 1000 + limits.idleTimeout)
        driver.now = 1003
        driver.receive("GET /events HTTP/1.1\r\n")
        #expect(driver.machine.nextDeadline == 1003 + limits.headerTimeout, "mid-request: the head's timeout")
        driver.receive("Host: x\r\n\r\n")
        #expect(driver.machine.nextDeadline == nil, "processing with nothing queued: only the handler can move it")
        driver.respond(HTTPResponse(headers: ["Content-Type": "text/event-stream"]) { _ in })
        #expect(driver.machine.nextDeadline == min(1008, 1003 + limits.writeTimeout), "the head is queued: a heartbeat or the write timeout")
        driver.flush()
        #expect(driver.machine.nextDeadline == 1008, "streaming: the next heartbeat")
        driver.record(driver.machine.send(EventPayload("data: 1\n\n"), now: 1006))
        driver.flush()
        #expect(driver.machine.nextDeadline == 1011, "an event pushes the heartbeat back")
        driver.now = 1007
        driver.record(driver.machine.endStream(now: 1007))
        #expect(driver.machine.phase == .draining && driver.machine.nextDeadline == 1007 + settings.lingerTime)
        driver.record(driver.machine.peerClosed())
        #expect(driver.machine.nextDeadline == nil)
    }

    @Test func aTickJustBeforeTheDeadlineDoesNothingAndJustAfterActs() {
        let driver = MachineDriver()
        guard let deadline = driver.machine.nextDeadline else {
            Issue.record("an idle connection has a deadline")
            return
        }
        var early = driver
        early.advance(to: deadline - 0.001)
        #expect(early.actions.isEmpty)
        var late = driver
        late.advance(to: deadline + 0.001)
        #expect(late.closeReason == "idle")
    }

    /// Seeded random sequences of events: at every step, a tick before ``ConnectionMachine/nextDeadline``
    /// (or at any time when there is none) returns no actions. This is what lets the loop skip ticks.
    @Test(arguments: [1, 7, 99, 2024, 31337] as [UInt64])
    func noTickBeforeTheDeadlineHasAnythingToDo(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var settings = ConnectionMachine.Settings()
        settings.heartbeat = 3
        settings.streamBufferLimit = 64
        settings.limits.headerTimeout = 2
        settings.limits.bodyTimeout = 4
        settings.limits.idleTimeout = 6
        settings.limits.writeTimeout = 5
        settings.limits.handshakeTimeout = 2
        let pieces = ["GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET /s HTTP/1.1\r\n", "Host: x\r\n\r\n",
                      "PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab", "cdef", "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n"]
        for run in 0..<40 {
            var driver = MachineDriver(tls: run % 5 == 0, settings: settings)
            for _ in 0..<60 {
                // The invariant, probed on a copy (the machine is a value).
                var probe = driver.machine
                let probeTime = driver.machine.nextDeadline.map { $0 - 0.01 } ?? driver.now + 1000
                if probeTime >= driver.now {
                    let actions = probe.tick(now: probeTime, date: MachineDriver.date)
                    #expect(actions.isEmpty, "seed \(seed) run \(run): a tick at \(probeTime) before the deadline \(String(describing: driver.machine.nextDeadline)) acted: \(actions)")
                }
                switch Int.random(in: 0..<9, using: &rng) {
                case 0: driver.record(driver.machine.handshakeDone(now: driver.now))
                case 1, 2: driver.receive(pieces.randomElement(using: &rng)!)
                case 3:
                    if driver.machine.phase == .processing {
                        let stream = Bool.random(using: &rng)
                        driver.respond(stream ? HTTPResponse(headers: ["Content-Type": "text/event-stream"]) { _ in } : text("ok"))
                    }
                case 4: driver.record(driver.machine.send(EventPayload(String(repeating: "e", count: Int.random(in: 1..<50, using: &rng))), now: driver.now))
                case 5: driver.flush()
                case 6: driver.record(driver.machine.resume(with: EventPayload("data: s\n\n"), now: driver.now))
                default: driver.advance(to: driver.now + Double(Int.random(in: 0..<40, using: &rng)) / 10)
                }
                if driver.machine.phase == .closed { break }
            }
        }
    }
}
