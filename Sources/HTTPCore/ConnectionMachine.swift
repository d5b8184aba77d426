import Logging

/// One HTTP/1.1 connection as a pure state machine: events in (bytes read, bytes written, a response,
/// an event for its stream, a timer tick, shutdown), actions out (write, dispatch a request, open a
/// stream, shut the write side, close). No sockets, no clock, no threads: every event carries the time
/// (`now`, monotonic seconds) and, where a response may be written, the `Date` field's text. The
/// socket executor (``Connection``) performs the actions and feeds back what happened.
///
/// The phases:
///
/// ```
/// handshaking ─► awaitingRequest ─► processing ─► awaitingRequest (keep-alive)
///                       │                 └─────► streaming ─► closing
///                       └─(bad request)─► closing ─► draining ─► closed
/// ```
///
/// Requests are answered one at a time in order: while one is being handled, no more input is parsed,
/// so pipelined requests wait (in the parser's buffer or the kernel's) and their responses go out in
/// request order. A response that ends the connection is written, then the write side is shut and the
/// connection lingers, reading and discarding, until the client closes or `lingerTime` passes (a
/// lingering close, so the client reads our answer rather than a reset).
package struct ConnectionMachine: Sendable {
    package enum Phase: Equatable, Sendable {
        /// Whether the executor should read from the socket in this phase.
        package var wantsInput: Bool {
            switch self {
            case .awaitingRequest, .streaming, .draining: true
            default: false
            }
        }

        case handshaking
        case awaitingRequest
        case processing
        case streaming
        /// Writing the last response, then closing.
        case closing
        /// Output done and write side shut; reading until the client closes.
        case draining
        case closed
    }

    /// What the executor must do, in order.
    package enum Action: Equatable, Sendable {
        /// Queue bytes to the socket, after those queued before.
        case write([UInt8])
        /// Hand a request to the handler; answer with ``ConnectionMachine/respond(_:now:date:)``.
        case dispatch(HTTPRequest, RequestInfo)
        /// The response is an event stream: create it and hand it to the handler's start closure.
        case openStream
        /// A paused stream has drained: ask its owner for a fresh state (or close if there is none).
        case streamDrained
        /// All output is written: shut the socket's write side (the lingering close begins).
        case shutdownWrite
        /// Close the socket; nothing more will be asked.
        case close(reason: String)
        /// Log a line: level, message, metadata.
        case log(Logger.Level, String, Logger.Metadata)
        /// Log a request's line (at `info`), kept as its fields until it is written.
        case logRequest(RequestLogLine)
        case count(Counter)
    }

    /// Counters the executor adds one to.
    package enum Counter: Equatable, Sendable {
        case request, badRequest, timeout, eventSent, streamOverflow, streamOpened
    }

    /// The settings a connection needs (a part of the server's configuration).
    package struct Settings: Sendable {
        package var limits = HTTPLimits()
        package var compression = true
        package var minimumCompressedSize = 1024
        package var heartbeat: Double = 15
        package var streamBufferLimit = 1 << 20
        /// Seconds a lingering close waits for the client to close.
        package var lingerTime: Double = 2
        package init(limits: HTTPLimits = HTTPLimits(), compression: Bool = true, minimumCompressedSize: Int = 1024, heartbeat: Double = 15,
                     streamBufferLimit: Int = 1 << 20, lingerTime: Double = 2) {
            self.limits = limits
            self.compression = compression
            self.minimumCompressedSize = minimumCompressedSize
            self.heartbeat = heartbeat
            self.streamBufferLimit = streamBufferLimit
            self.lingerTime = lingerTime
        }
    }

    /// The comment sent on idle streams; deflated once, ahead of time.
    package static let heartbeatPayload: EventPayload = {
        let payload = EventPayload(ServerSentEvent.comment("heartbeat"))
        payload.prepareDeflated()
        return payload
    }()

    /// The settings, shared by reference: every connection of a server has the same ones, and an idle
    /// subscriber should not carry its own copy.
    private let sharedSettings: SharedSettings
    package var settings: Settings { sharedSettings.value }
    package let id: Int
    package let remote: String
    package private(set) var phase: Phase
    package private(set) var parser: HTTPRequestParser
    /// Bytes handed out in `.write` actions and not yet reported written.
    package private(set) var queued = 0
    /// The request being answered.
    package private(set) var current: RequestInfo?
    package private(set) var writer: SSEStreamWriter?
    package private(set) var isShuttingDown = false
    private var closeAfterResponse = false
    private var phaseSince: Double
    private var requestStartedAt: Double?
    private var bodyStartedAt: Double?
    private var lastWriteProgress: Double

    /// Settings shared by every connection of a server (one allocation, not one copy each).
    package final class SharedSettings: Sendable {
        package let value: Settings
        /// The parsers' limits (`value.limits`), shared the same way.
        package let limits: HTTPRequestParser.SharedLimits
        package init(_ value: Settings) {
            self.value = value
            self.limits = HTTPRequestParser.SharedLimits(value.limits)
        }
    }

    package init(id: Int, remote: String, settings: Settings, tls: Bool, now: Double) {
        self.init(id: id, remote: remote, settings: SharedSettings(settings), tls: tls, now: now)
    }

    package init(id: Int, remote: String, settings: SharedSettings, tls: Bool, now: Double) {
        self.id = id
        self.remote = remote
        self.sharedSettings = settings
        self.parser = HTTPRequestParser(sharedLimits: settings.limits)
        self.phase = tls ? .handshaking : .awaitingRequest
        self.phaseSince = now
        self.lastWriteProgress = now
    }

    /// Whether the executor should read from the socket now.
    package var wantsInput: Bool { phase.wantsInput }

    /// Whether an event stream is open on this connection.
    package var isStreaming: Bool { phase == .streaming }

    // MARK: Events

    /// The TLS handshake finished.
    package mutating func handshakeDone(now: Double) -> [Action] {
        guard phase == .handshaking else { return [] }
        phase = .awaitingRequest
        phaseSince = now
        return []
    }

    /// Bytes arrived from the client.
    package mutating func received(_ bytes: [UInt8], now: Double, date: String) -> [Action] {
        var actions: [Action] = []
        actions.reserveCapacity(4)  // a request's dispatch and its log and count actions: one allocation
        switch phase {
        case .awaitingRequest:
            if !parser.isMidRequest { requestStartedAt = now }
            parser.append(bytes)
            processInput(now: now, date: date, into: &actions)
        case .processing:
            parser.append(bytes)  // a pipelined request: parsed once this one is answered
        default:
            break  // streaming or draining: nothing more is expected from the client
        }
        return actions
    }

    /// The client closed its side or reset the connection, or reading failed.
    package mutating func peerClosed(reason: String = "client closed") -> [Action] {
        var actions: [Action] = []
        close(reason: reason, into: &actions)
        return actions
    }

    /// The executor wrote `count` of the queued bytes.
    package mutating func wrote(_ count: Int, now: Double) -> [Action] {
        guard phase != .closed, count > 0 else { return [] }
        queued = max(0, queued - count)
        lastWriteProgress = now
        guard queued == 0 else { return [] }
        var actions: [Action] = []
        switch phase {
        case .closing: finishClosing(now: now, into: &actions)
        case .streaming where writer?.isPaused == true: actions.append(.streamDrained)
        default: break
        }
        return actions
    }

    /// The handler's answer to the dispatched request (ignored when none is waiting for one).
    package mutating func respond(_ response: PreparedResponse, now: Double, date: String) -> [Action] {
        guard phase == .processing else { return [] }
        var actions: [Action] = []
        actions.reserveCapacity(4)  // the write, the count and the log line: one allocation
        respond(response, now: now, date: date, into: &actions)
        return actions
    }

    /// Answers at once without reading a request (a connection over a cap).
    package mutating func refuse(_ response: HTTPResponse, now: Double, date: String) -> [Action] {
        guard phase == .awaitingRequest else { return [] }
        let info = RequestInfo.unknown(at: now, path: "(refused)")
        current = info
        var actions: [Action] = []
        respond(PreparedResponse.prepare(response, for: info, compressAbove: .max), now: now, date: date, into: &actions)
        return actions
    }

    /// An event for the open stream.
    package mutating func send(_ payload: EventPayload, now: Double) -> [Action] {
        switch sendEvent(payload, now: now) {
        case .write(let bytes): [.count(.eventSent), .write(bytes)]
        case .overflowed(let actions): actions
        case .dropped: []
        }
    }

    /// What ``sendEvent(_:now:)`` decided.
    package enum SendOutcome: Equatable, Sendable {
        /// Count one event sent and queue these bytes (already counted in ``queued``).
        case write([UInt8])
        /// The subscriber fell behind: perform these actions (count, log); the stream is paused.
        case overflowed([Action])
        /// No stream, or paused: nothing to do.
        case dropped
    }

    /// ``send(_:now:)`` for the hot path of a fan-out: the same decision, without an action list for
    /// the common case (one event to each of thousands of subscribers).
    package mutating func sendEvent(_ payload: EventPayload, now: Double) -> SendOutcome {
        guard phase == .streaming, var writer else { return .dropped }
        let decision = writer.event(payload, queued: queued, now: now)
        self.writer = writer
        switch decision {
        case .write(let bytes):
            guard !bytes.isEmpty else { return .dropped }
            if queued == 0 { lastWriteProgress = now }
            queued += bytes.count
            return .write(bytes)
        case .overflowed:
            return .overflowed([.count(.streamOverflow), .log(.warning, "sse #\(id) fell behind (\(queued) bytes queued): events paused until it drains",
                                                                ["connection": "\(id)", "queued": "\(queued)"])])
        case .paused:
            return .dropped
        }
    }

    /// Clears an overflow and sends a fresh state.
    package mutating func resume(with payload: EventPayload, now: Double) -> [Action] {
        guard phase == .streaming, var writer else { return [] }
        let bytes = writer.resume(with: payload, now: now)
        self.writer = writer
        var actions: [Action] = [.count(.eventSent)]
        write(bytes, now: now, into: &actions)
        return actions
    }

    /// Ends the stream after what is queued, with `final` as its last event when given (written even
    /// while the stream is paused after an overflow: the client learns why it ends).
    package mutating func endStream(with final: EventPayload? = nil, now: Double) -> [Action] {
        guard phase == .streaming else { return [] }
        var actions: [Action] = []
        if var writer {
            let bytes = final.map { writer.end(with: $0, now: now) } ?? writer.end()
            self.writer = writer
            if final != nil { actions.append(.count(.eventSent)) }
            write(bytes, now: now, into: &actions)
        }
        phase = .closing
        if queued == 0 { finishClosing(now: now, into: &actions) }
        return actions
    }

    /// The loop's timer: deadlines and heartbeats.
    package mutating func tick(now: Double, date: String) -> [Action] {
        var actions: [Action] = []
        let limits = settings.limits
        switch phase {
        case .handshaking where now - phaseSince > limits.handshakeTimeout:
            timeout("tls handshake", into: &actions)
        case .awaitingRequest:
            if let started = bodyStartedAt, now - started > limits.bodyTimeout {
                actions.append(.count(.timeout))
                let info = refusedRequestInfo(at: now)
                current = info
                phase = .processing
                let response = HTTPResponse.error(.requestTimeout, "request timeout", detail: "the request body did not arrive within \(limits.bodyTimeout == limits.bodyTimeout.rounded() ? String(Int(limits.bodyTimeout)) : String(limits.bodyTimeout)) s",
                                                  headers: ["Connection": "close"])
                respond(PreparedResponse.prepare(response, for: info, compressAbove: .max), now: now, date: date, into: &actions)
            } else if let started = requestStartedAt, bodyStartedAt == nil, parser.isMidRequest, now - started > limits.headerTimeout {
                timeout("request head", into: &actions)
            } else if !parser.isMidRequest, now - phaseSince > limits.idleTimeout {
                close(reason: "idle", into: &actions)
            }
        case .draining where now - phaseSince > settings.lingerTime:
            close(reason: "linger done", into: &actions)
        case .streaming:
            if var writer, let bytes = writer.heartbeatIfDue(Self.heartbeatPayload, queued: queued, now: now) {
                self.writer = writer
                actions.append(.count(.eventSent))
                write(bytes, now: now, into: &actions)
            }
        default:
            break
        }
        if phase != .closed, queued > 0, now - lastWriteProgress > limits.writeTimeout {
            timeout("write", into: &actions)
        }
        return actions
    }

    /// The earliest time at which ``tick(now:date:)`` may have something to do; nil when only another
    /// event can give it something. A tick before this time returns no actions and changes nothing, so
    /// the executor ticks the machine only once it has come (it may be early, never late).
    package var nextDeadline: Double? { computeNextDeadline() }

    /// ``nextDeadline`` for an executor that keeps the machine in a class: `inout`, so the machine is
    /// read in place. (A getter called from another module takes the whole struct as a copy, which cost
    /// two copies of it per event in a fan-out.)
    package static func nextDeadline(of machine: inout ConnectionMachine) -> Double? {
        machine.computeNextDeadline()
    }

    @inline(__always)
    private func computeNextDeadline() -> Double? {
        let limits = settings.limits
        var deadline = Double.infinity
        switch phase {
        case .handshaking:
            deadline = phaseSince + limits.handshakeTimeout
        case .awaitingRequest:
            if let started = bodyStartedAt { deadline = started + limits.bodyTimeout }
            if let started = requestStartedAt, bodyStartedAt == nil, parser.isMidRequest {
                deadline = min(deadline, started + limits.headerTimeout)
            }
            if !parser.isMidRequest { deadline = min(deadline, phaseSince + limits.idleTimeout) }
        case .draining:
            deadline = phaseSince + settings.lingerTime
        case .streaming:
            if let writer, !writer.isPaused, !writer.isEnded { deadline = writer.nextHeartbeat }
        case .processing, .closing, .closed:
            break
        }
        if phase != .closed, queued > 0 { deadline = min(deadline, lastWriteProgress + limits.writeTimeout) }
        return deadline.isFinite ? deadline : nil
    }

    /// Graceful shutdown: end the stream, close if idle, else close after the response in flight.
    package mutating func beginShutdown(now: Double) -> [Action] {
        isShuttingDown = true
        switch phase {
        case .streaming: return endStream(now: now)
        case .awaitingRequest where !parser.isMidRequest, .handshaking: return peerClosed(reason: "shutdown")
        default:
            closeAfterResponse = true
            return []
        }
    }

    /// Closes at once (a failed handshake, a stream without a resync handler that fell behind, a
    /// failed registration).
    package mutating func close(reason: String) -> [Action] {
        var actions: [Action] = []
        close(reason: reason, into: &actions)
        return actions
    }

    // MARK: Steps

    private mutating func processInput(now: Double, date: String, into actions: inout [Action]) {
        while phase == .awaitingRequest {
            switch parser.next() {
            case .needMore:
                if parser.isReadingBody, bodyStartedAt == nil { bodyStartedAt = now }
                return
            case .expectContinue:
                bodyStartedAt = now
                write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), now: now, into: &actions)
            case .error(let error):
                actions.append(.count(.badRequest))
                let info = refusedRequestInfo(at: now)
                current = info
                let response = HTTPResponse.error(error.status, error.status.reason.lowercased(), detail: error.detail, headers: ["Connection": "close"])
                respond(PreparedResponse.prepare(response, for: info, compressAbove: .max), now: now, date: date, into: &actions)
                return
            case .request(var request):
                requestStartedAt = nil
                bodyStartedAt = nil
                phase = .processing
                phaseSince = now
                let isHead = request.method == "HEAD"
                if isHead { request.method = "GET" }  // RFC 9110 §9.3.2: HEAD is GET without the body.
                let gzip = settings.compression && Gzip.isAccepted(by: request.headers["Accept-Encoding"])
                // The path as sent (percent-encoded): a decoded one could carry a line break into the log.
                let info = RequestInfo(method: isHead ? "HEAD" : request.method, path: request.rawPath, start: now,
                                       keepAlive: request.wantsKeepAlive, head: isHead, gzip: gzip,
                                       lastEventID: request.headers["Last-Event-ID"].map { String($0.prefix(80)) })
                current = info
                actions.append(.dispatch(request, info))
                return
            }
        }
    }

    /// What the log line of a request the connection refuses shows: the method and path of its head
    /// when the head was read (a body too large or too slow, a framing refused), else `- -`.
    private func refusedRequestInfo(at now: Double) -> RequestInfo {
        guard let head = parser.refusedHead else { return .unknown(at: now) }
        return RequestInfo(method: head.method, path: head.path, start: now, keepAlive: false, head: false, gzip: false)
    }

    private mutating func respond(_ response: PreparedResponse, now: Double, date: String, into actions: inout [Action]) {
        guard phase == .processing || phase == .awaitingRequest else { return }
        let info = current ?? .unknown(at: now)
        let keepAlive = info.keepAlive && !closeAfterResponse && !isShuttingDown && !response.close
        // One buffer, one write, for head and body.
        write(ResponseHead.encode(status: response.status, headers: response.headers, keepAlive: keepAlive, date: date, body: response.body),
              now: now, into: &actions)
        actions.append(.count(.request))
        current = nil
        if response.stream != nil {
            phase = .streaming
            phaseSince = now
            parser.releaseBuffer()  // nothing more is read from a subscriber: its request bytes can go
            let writer = SSEStreamWriter(gzip: info.gzip, heartbeat: settings.heartbeat, bufferLimit: settings.streamBufferLimit, now: now)
            self.writer = writer
            var metadata = response.logMetadata
            metadata["connection"] = "\(id)"
            metadata["path"] = "\(info.path)"
            metadata["remote"] = "\(remote)"
            if let lastEventID = info.lastEventID { metadata["last_event_id"] = "\(lastEventID)" }
            actions.append(.log(.info, "sse connect #\(id) \(info.path) from \(remote)\(info.lastEventID.map { " last-event-id=\($0)" } ?? "")\(info.gzip ? " gzip" : "")",
                                metadata))
            actions.append(.count(.streamOpened))
            write(writer.opening(), now: now, into: &actions)
            actions.append(.openStream)
            return
        }
        let milliseconds = Int((now - info.start) * 1000)
        // The path has no query string (`HTTPRequest.path`): tokens in a query are never logged.
        let bytes = info.head ? 0 : response.bodyLength
        actions.append(.logRequest(RequestLogLine(method: info.method, path: info.path, status: response.status.code, bytes: bytes,
                                                  milliseconds: milliseconds, handlerMetadata: response.logMetadata)))
        if keepAlive {
            phase = .awaitingRequest
            phaseSince = now
            if parser.bufferedByteCount > 0 {
                requestStartedAt = now
                processInput(now: now, date: date, into: &actions)
            }
        } else {
            phase = .closing
            if queued == 0 { finishClosing(now: now, into: &actions) }
        }
    }

    private mutating func write(_ bytes: [UInt8], now: Double, into actions: inout [Action]) {
        guard !bytes.isEmpty, phase != .closed, phase != .draining else { return }
        if queued == 0 { lastWriteProgress = now }
        queued += bytes.count
        actions.append(.write(bytes))
    }

    private mutating func finishClosing(now: Double, into actions: inout [Action]) {
        guard phase == .closing else { return }
        phase = .draining
        phaseSince = now
        actions.append(.shutdownWrite)
    }

    private mutating func timeout(_ what: String, into actions: inout [Action]) {
        actions.append(.count(.timeout))
        actions.append(.log(.info, "connection #\(id) from \(remote): \(what) timeout", ["connection": "\(id)", "remote": "\(remote)", "timeout": "\(what)"]))
        close(reason: "\(what) timeout", into: &actions)
    }

    private mutating func close(reason: String, into actions: inout [Action]) {
        guard phase != .closed else { return }
        phase = .closed
        queued = 0
        writer = nil
        actions.append(.close(reason: reason))
    }
}
