#if canImport(Glibc)
import Glibc
#endif
import CSystemShims

/// One client connection. Lives on the loop thread: all its state is touched only there.
///
/// It is a small state machine over ``Phase``: read a request, hand it to the handler, write the
/// response, then read the next one (keep-alive) or close; or, for an event stream, write events until
/// either side ends it. Requests are answered one at a time in order: while one is being handled no
/// more input is read, so pipelined requests wait in the kernel's buffer.
///
/// `@unchecked Sendable`: references to a connection cross threads only to come back to the loop
/// through `EventLoop.execute`; nothing reads or writes its state anywhere else.
final class Connection: EventHandler, @unchecked Sendable {
    enum Phase: Equatable {
        case handshaking
        case awaitingRequest
        case processing
        case streaming
        /// Writing the last response, then closing.
        case closing
        /// Output done and write side shut; reading until the client closes (a lingering close, so
        /// the client sees our error response rather than a reset).
        case draining
        case closed
    }

    let id: Int
    let fd: Int32
    let core: ServerCore
    let transport: Transport
    let remote: String
    var parser: HTTPRequestParser
    private(set) var phase: Phase

    // Output: a queue of shared byte arrays, written in order.
    private var output: [[UInt8]] = []
    private var outputHead = 0
    private var outputOffset = 0
    private(set) var pendingBytes = 0
    private var interest: UInt32 = 0

    // Timing, on the loop's monotonic clock.
    private var phaseSince: Double
    private var requestStartedAt: Double?
    private var bodyStartedAt: Double?
    private var lastWriteProgress: Double
    var lastEventAt: Double

    // The request being answered.
    private var current: (method: String, path: String, start: Double, keepAlive: Bool, head: Bool, gzip: Bool)?
    private var closeAfterResponse = false

    // Event stream state.
    private(set) var stream: EventStream?
    private var gzipState: (crc: UInt32, length: Int)?
    private var overflowed = false

    init(id: Int, fd: Int32, core: ServerCore, transport: Transport, remote: String, now: Double) {
        self.id = id
        self.fd = fd
        self.core = core
        self.transport = transport
        self.remote = remote
        self.parser = HTTPRequestParser(limits: core.configuration.limits)
        self.phase = transport is PlainTransport ? .awaitingRequest : .handshaking
        self.phaseSince = now
        self.lastWriteProgress = now
        self.lastEventAt = now
    }

    // MARK: Readiness

    func start() throws(SystemError) {
        interest = Epoll.`in` | Epoll.rdhup
        try core.loop.register(fd, events: interest, handler: self)
        if phase == .handshaking { advanceHandshake() }
    }

    func handle(events: UInt32) {
        if events & (Epoll.err | Epoll.hup) != 0 && events & Epoll.`in` == 0 {
            close(reason: "hang-up")
            return
        }
        if phase == .handshaking {
            advanceHandshake()
            return
        }
        if events & Epoll.out != 0 { flush() }
        if events & (Epoll.`in` | Epoll.rdhup | Epoll.hup | Epoll.err) != 0 { readAvailable() }
    }

    private func updateInterest() {
        guard phase != .closed else { return }
        var wanted: UInt32 = Epoll.rdhup
        switch phase {
        case .processing, .closing: break
        default: wanted |= Epoll.`in`
        }
        if pendingBytes > 0 { wanted |= Epoll.out }
        if wanted != interest {
            interest = wanted
            core.loop.modify(fd, events: wanted)
        }
    }

    private func advanceHandshake() {
        switch transport.handshake() {
        case .done:
            phase = .awaitingRequest
            phaseSince = EventLoop.now()
            updateInterest()
            if transport.hasBufferedInput { readAvailable() }
        case .wantRead:
            if interest != Epoll.`in` | Epoll.rdhup {
                interest = Epoll.`in` | Epoll.rdhup
                core.loop.modify(fd, events: interest)
            }
        case .wantWrite:
            interest = Epoll.out | Epoll.rdhup
            core.loop.modify(fd, events: interest)
        case .failed(let reason):
            core.logger.debug("tls handshake with \(remote) failed: \(reason)")
            close(reason: "tls handshake failed")
        }
    }

    // MARK: Reading

    private func readAvailable() {
        var rounds = 0
        while phase != .closed && phase != .processing && phase != .closing {
            rounds += 1
            let result: Socket.IOResult
            do {
                result = try core.readBuffer.withUnsafeMutableBytes { buffer throws(SystemError) in try transport.read(into: buffer) }
            } catch {
                core.logger.debug("connection \(id): \(error)")
                close(reason: "read error")
                return
            }
            switch result {
            case .closed:
                close(reason: "client closed")
                return
            case .wouldBlock:
                return
            case .bytes(let count):
                switch phase {
                case .awaitingRequest:
                    if !parser.isMidRequest { requestStartedAt = EventLoop.now() }
                    core.readBuffer.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                    processInput()
                case .streaming, .draining:
                    break  // Nothing more is expected from the client; discard.
                default:
                    return
                }
            }
            if rounds >= 4 && !transport.hasBufferedInput { return }  // Fairness: level-triggered, we'll be back.
        }
    }

    /// Parses what is buffered and acts on it.
    private func processInput() {
        guard phase == .awaitingRequest else { return }
        switch parser.next() {
        case .needMore:
            if parser.isReadingBody, bodyStartedAt == nil { bodyStartedAt = EventLoop.now() }
            updateInterest()
        case .expectContinue:
            bodyStartedAt = EventLoop.now()
            enqueue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            processInput()
        case .error(let error):
            core.metrics.badRequests.add(1, ordering: .relaxed)
            current = ("-", "-", EventLoop.now(), false, false, false)
            respond(.error(error.status, error.status.reason.lowercased(), detail: error.detail, headers: ["Connection": "close"]))
        case .request(let request):
            requestStartedAt = nil
            bodyStartedAt = nil
            dispatch(request)
        }
    }

    private func dispatch(_ request: HTTPRequest) {
        phase = .processing
        phaseSince = EventLoop.now()
        updateInterest()
        var request = request
        let isHead = request.method == "HEAD"
        if isHead { request.method = "GET" }  // RFC 9110 §9.3.2: HEAD is GET without the body.
        let gzip = core.configuration.compression && Gzip.isAccepted(by: request.headers["Accept-Encoding"])
        current = (isHead ? "HEAD" : request.method, request.path, phaseSince, request.wantsKeepAlive, isHead, gzip)
        core.handle(request, connection: self)
    }

    // MARK: Responding

    /// Writes a handler's response (loop thread).
    func respond(_ response: HTTPResponse, request: HTTPRequest? = nil) {
        guard phase == .processing || phase == .awaitingRequest else { return }
        let info = current ?? ("-", "-", EventLoop.now(), false, false, false)
        var keepAlive = info.keepAlive && !closeAfterResponse && !core.isShuttingDown
            && !response.headers.containsToken("close", in: "Connection")
        var headers = response.headers
        headers.remove("Connection")
        var body: [UInt8] = []
        switch response.body {
        case .bytes(let bytes):
            body = bytes
            let type = headers["Content-Type"] ?? ""
            if Self.isCompressible(type) && headers["Content-Encoding"] == nil {
                if !headers.values("Vary").contains(where: { $0.lowercased().contains("accept-encoding") }) {
                    headers.add("Vary", "Accept-Encoding")
                }
                if info.gzip && body.count >= core.configuration.minimumCompressedSize {
                    body = Gzip.compress(body)
                    headers.set("Content-Encoding", "gzip")
                }
            }
            let status = response.status.code
            if status != 304 && status != 204 && !(100..<200).contains(status) {
                headers.set("Content-Length", String(body.count))
            }
        case .stream:
            keepAlive = false
            if info.gzip && !info.head {
                headers.set("Content-Encoding", "gzip")
            }
            headers.add("Vary", "Accept-Encoding")
        }
        headers.set("Connection", keepAlive ? "keep-alive" : "close")
        var head = "HTTP/1.1 \(response.status.code) \(response.status.reason)\r\nDate: \(core.dateHeader())\r\nServer: diffstream\r\n"
        for field in headers { head += "\(field.name): \(field.value)\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        if case .bytes = response.body, !info.head { bytes += body }  // one write for head and body
        enqueue(bytes)
        core.metrics.requests.add(1, ordering: .relaxed)
        let milliseconds = Int((EventLoop.now() - info.start) * 1000)

        if case .stream(let start) = response.body, !info.head {
            phase = .streaming
            let resume = request?.headers["Last-Event-ID"].map { " last-event-id=\($0.prefix(80))" } ?? ""
            core.logger.info("sse connect #\(id) \(info.path) from \(remote)\(resume)\(info.gzip ? " gzip" : "")")
            core.metrics.streamsOpen.add(1, ordering: .relaxed)
            let stream = EventStream(id: id, request: request ?? HTTPRequest(method: "GET", target: info.path), core: core)
            self.stream = stream
            if info.gzip {
                gzipState = (0, 0)
                enqueue(Gzip.header)
            }
            current = nil
            updateInterest()
            start(stream)
            return
        }
        core.logger.info("\(info.method) \(info.path) \(response.status.code) \(info.head ? 0 : body.count)B \(milliseconds)ms")
        current = nil
        if keepAlive {
            phase = .awaitingRequest
            phaseSince = EventLoop.now()
            updateInterest()
            if parser.bufferedByteCount > 0 {
                requestStartedAt = EventLoop.now()
                processInput()
            }
        } else {
            phase = .closing
            updateInterest()
            if pendingBytes == 0 { finishClosing() }
        }
    }

    /// Answers at once without reading a request (the connection cap).
    func refuse(_ response: HTTPResponse) {
        guard phase == .awaitingRequest else { return }
        current = ("-", "(refused)", EventLoop.now(), false, false, false)
        respond(response)
    }

    static func isCompressible(_ contentType: String) -> Bool {
        let type = contentType.lowercased()
        return type.hasPrefix("text/") || type.hasPrefix("application/json") || type.hasPrefix("application/javascript")
            || type.hasPrefix("image/svg+xml") || type.hasPrefix("application/xml")
    }

    // MARK: Event streams

    func enqueueEvent(_ payload: EventPayload) {
        guard phase == .streaming, !overflowed else { return }
        // An event bigger than the whole budget still goes out when nothing else is queued.
        if pendingBytes > 0 && pendingBytes + payload.bytes.count > core.configuration.streamBufferLimit {
            overflowed = true
            core.metrics.streamOverflows.add(1, ordering: .relaxed)
            core.logger.warning("sse #\(id) fell behind (\(pendingBytes) bytes queued): events paused until it drains")
            return
        }
        writeEvent(payload)
    }

    private func writeEvent(_ payload: EventPayload) {
        lastEventAt = EventLoop.now()
        core.metrics.eventsSent.add(1, ordering: .relaxed)
        if let state = gzipState {
            let compressed = payload.deflated
            gzipState = (Gzip.combine(state.crc, compressed.crc, lengthB: compressed.length), state.length + compressed.length)
            enqueue(compressed.block)
        } else {
            enqueue(payload.bytes)
        }
    }

    func resumeStream(with payload: EventPayload) {
        guard phase == .streaming else { return }
        overflowed = false
        writeEvent(payload)
    }

    func endStream() {
        guard phase == .streaming else { return }
        if let state = gzipState {
            var trailer = Gzip.finalEmptyBlock
            Gzip.appendTrailer(crc: state.crc, length: state.length, to: &trailer)
            gzipState = nil
            enqueue(trailer)
        }
        phase = .closing
        updateInterest()
        if pendingBytes == 0 { finishClosing() }
    }

    private func afterDrain() {
        guard overflowed, let stream else { return }
        if stream.hasResyncHandler {
            stream.requestResync()
        } else {
            close(reason: "fell behind")
        }
    }

    // MARK: Writing

    func enqueue(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, phase != .closed, phase != .draining else { return }
        if pendingBytes == 0 { lastWriteProgress = EventLoop.now() }
        output.append(bytes)
        pendingBytes += bytes.count
        if interest & Epoll.out == 0 { flush() }
    }

    private func flush() {
        while outputHead < output.count {
            let chunk = output[outputHead]
            let result: Socket.IOResult
            do {
                result = try chunk.withUnsafeBytes { buffer throws(SystemError) in
                    try transport.write(UnsafeRawBufferPointer(rebasing: buffer[outputOffset...]))
                }
            } catch {
                core.logger.debug("connection \(id): \(error)")
                close(reason: "write error")
                return
            }
            switch result {
            case .bytes(let count):
                core.metrics.bytesSent.add(count, ordering: .relaxed)
                pendingBytes -= count
                outputOffset += count
                lastWriteProgress = EventLoop.now()
                if outputOffset == chunk.count {
                    output[outputHead] = []
                    outputHead += 1
                    outputOffset = 0
                }
            case .wouldBlock:
                updateInterest()
                return
            case .closed:
                close(reason: "client closed")
                return
            }
        }
        output.removeAll(keepingCapacity: output.capacity <= 16)
        outputHead = 0
        updateInterest()
        switch phase {
        case .closing: finishClosing()
        case .streaming: afterDrain()
        default: break
        }
    }

    /// All output is written: shut our side, then linger briefly for the client to close.
    private func finishClosing() {
        guard phase == .closing else { return }
        shutdown(fd, Int32(SHUT_WR))
        phase = .draining
        phaseSince = EventLoop.now()
        updateInterest()
    }

    // MARK: Timeouts and shutdown

    /// Checks deadlines (called by the loop's tick).
    func checkTimeouts(now: Double) {
        let limits = core.configuration.limits
        switch phase {
        case .handshaking where now - phaseSince > limits.handshakeTimeout:
            timeout("tls handshake")
        case .awaitingRequest:
            if let started = bodyStartedAt, now - started > limits.bodyTimeout {
                core.metrics.timeouts.add(1, ordering: .relaxed)
                current = ("-", "-", now, false, false, false)
                phase = .processing
                respond(.error(.requestTimeout, "request timeout", detail: "the request body did not arrive within \(Int(limits.bodyTimeout)) s", headers: ["Connection": "close"]))
            } else if let started = requestStartedAt, bodyStartedAt == nil, parser.isMidRequest, now - started > limits.headerTimeout {
                timeout("request head")
            } else if !parser.isMidRequest, now - phaseSince > limits.idleTimeout {
                close(reason: "idle")
            }
        case .draining where now - phaseSince > 2:
            close(reason: "linger done")
        default:
            break
        }
        if pendingBytes > 0, now - lastWriteProgress > limits.writeTimeout, phase != .closed {
            timeout("write")
        }
    }

    private func timeout(_ what: String) {
        core.metrics.timeouts.add(1, ordering: .relaxed)
        core.logger.info("connection #\(id) from \(remote): \(what) timeout")
        close(reason: "\(what) timeout")
    }

    /// Graceful shutdown: end streams, close idle connections, let in-flight responses finish.
    func beginShutdown() {
        switch phase {
        case .streaming: endStream()
        case .awaitingRequest where !parser.isMidRequest: close(reason: "shutdown")
        case .handshaking: close(reason: "shutdown")
        default: closeAfterResponse = true
        }
    }

    func close(reason: String) {
        guard phase != .closed else { return }
        let wasStreaming = stream != nil
        phase = .closed
        core.loop.deregister(fd)
        transport.release()
        Glibc.close(fd)
        output = []
        pendingBytes = 0
        core.connectionClosed(self)
        if let stream {
            if wasStreaming { core.metrics.streamsOpen.subtract(1, ordering: .relaxed) }
            core.logger.info("sse disconnect #\(id) \(stream.request.path) (\(reason))")
            self.stream = nil
            stream.terminate()
        }
    }
}
