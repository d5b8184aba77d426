#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import Logging
import Synchronization

/// The socket executor of one client connection: it reads and writes the socket, keeps the epoll
/// interest and the output queue, and carries out what its ``ConnectionMachine`` decides. Every
/// protocol decision (parsing, keep-alive, HEAD, streams, timeouts, the lingering close) is the
/// machine's; this class only has the socket's side (and the TLS handshake, which is the transport's).
/// It lives on its loop's thread: all its state is touched only there.
///
/// `@unchecked Sendable`: references to a connection cross threads only to come back to its loop
/// through `EventLoop.execute`; nothing reads or writes its state anywhere else.
final class Connection: EventHandler, @unchecked Sendable {
    let id: Int
    let fd: Int32
    unowned let loop: LoopCore
    let transport: Transport
    /// The peer's numeric host, counted against the per-address cap.
    let address: String
    /// Whether the connection counts against the caps (false: it is being refused with a 503).
    let admitted: Bool
    /// Only the owning loop's thread touches it, one call at a time, so the runtime's exclusivity checks
    /// (a `swift_beginAccess`/`swift_endAccess` pair on every use, about 100 instructions per event of a
    /// fan-out) are left out.
    @exclusivity(unchecked) private(set) var machine: ConnectionMachine

    // Output: a queue of shared byte arrays, written in order.
    private var output: [[UInt8]] = []
    private var outputHead = 0
    private var outputOffset = 0
    private var interest: UInt32 = 0
    private var flushing = false

    private(set) var stream: EventStream?
    /// The handler's log metadata of the response that opened the event stream (say `feed`), for the
    /// disconnect line, which adds its own keys only when written.
    private var streamLogMetadata = StreamLogMetadata()
    /// The deadline at which this connection sits in its loop's timer queue (nil: not queued).
    var timerDeadline: Double?

    init(id: Int, fd: Int32, loop: LoopCore, transport: Transport, remote: String, address: String, admitted: Bool, now: Double) {
        self.id = id
        self.fd = fd
        self.loop = loop
        self.transport = transport
        self.address = address
        self.admitted = admitted
        self.machine = ConnectionMachine(id: id, remote: remote, settings: loop.server.machineSettings,
                                         tls: !(transport is PlainTransport), now: now)
    }

    var isClosed: Bool { machine.phase == .closed }

    // MARK: Readiness

    func start() throws(SystemError) {
        interest = Epoll.`in` | Epoll.rdhup
        try loop.loop.register(fd, events: interest, handler: self)
        scheduleTimer()
        if machine.phase == .handshaking { advanceHandshake() }
    }

    func handle(events: UInt32) {
        if events & (Epoll.err | Epoll.hup) != 0 && events & Epoll.`in` == 0 {
            perform(machine.peerClosed(reason: "hang-up"))
            return
        }
        if machine.phase == .handshaking {
            advanceHandshake()
            return
        }
        if events & Epoll.out != 0 { flush() }
        if events & (Epoll.`in` | Epoll.rdhup | Epoll.hup | Epoll.err) != 0 {
            // Bytes came while a request is being answered (pipelined): now stop watching for input,
            // or level-triggered epoll would report them on every wait until the answer is written.
            if machine.phase == .processing { updateInterest(keepingInput: false) }
            readAvailable()
        }
    }

    /// Asks epoll for what the machine's phase needs (``ConnectionInterest``).
    private func updateInterest(keepingInput: Bool = true) {
        guard !isClosed, machine.phase != .handshaking else { return }
        let wanted = ConnectionInterest.wanted(phase: machine.phase, outputQueued: outputHead < output.count, current: interest, keepingInput: keepingInput)
        if wanted != interest {
            interest = wanted
            loop.loop.modify(fd, events: wanted)
        }
    }

    private func advanceHandshake() {
        switch transport.handshake() {
        case .done:
            perform(machine.handshakeDone(now: EventLoop.now()))
            updateInterest()
            if transport.hasBufferedInput { readAvailable() }
        case .wantRead:
            if interest != Epoll.`in` | Epoll.rdhup {
                interest = Epoll.`in` | Epoll.rdhup
                loop.loop.modify(fd, events: interest)
            }
        case .wantWrite:
            interest = Epoll.out | Epoll.rdhup
            loop.loop.modify(fd, events: interest)
        case .failed(let reason):
            loop.server.logger.debug("tls handshake with \(machine.remote) failed: \(reason)", source: HTTPServer.logSource)
            perform(machine.close(reason: "tls handshake failed"))
        }
    }

    // MARK: Reading

    private func readAvailable() {
        var rounds = 0
        while machine.phase.wantsInput {
            rounds += 1
            let result: Socket.IOResult
            do {
                result = try loop.readBuffer.withUnsafeMutableBytes { buffer throws(SystemError) in try transport.read(into: buffer) }
            } catch {
                loop.server.logger.debug("connection \(id): \(error)", source: HTTPServer.logSource)
                perform(machine.peerClosed(reason: "read error"))
                return
            }
            switch result {
            case .closed:
                perform(machine.peerClosed())
                return
            case .wouldBlock:
                return
            case .bytes(let count):
                if machine.phase == .awaitingRequest {
                    let bytes = Array(loop.readBuffer[0..<count])
                    perform(machine.received(bytes, now: EventLoop.now(), date: loop.dateHeader()))
                }  // else streaming or draining: discarded
            }
            if rounds >= 4 && !transport.hasBufferedInput { return }  // Fairness: level-triggered, we'll be back.
        }
    }

    // MARK: Actions

    /// Carries out the machine's actions, in order. `opening` is the handler's stream start and the
    /// request it answers, for an `.openStream` among them (only a response can open a stream).
    func perform(_ actions: [ConnectionMachine.Action], opening: StreamOpening? = nil) {
        defer { scheduleTimer() }  // any event may have moved the machine's next deadline
        guard !actions.isEmpty else { return }
        let server = loop.server
        var wroteSomething = false
        for action in actions {
            switch action {
            case .write(let bytes):
                output.append(bytes)
                wroteSomething = true
            case .dispatch(let request, let info):
                loop.dispatch(request, info: info, connection: self)
            case .openStream:
                if let opening { openStream(opening) }
            case .streamDrained:
                if let stream, stream.hasResyncHandler {
                    stream.requestResync()
                } else {
                    perform(machine.close(reason: "fell behind"))
                }
            case .shutdownWrite:
                shutdown(fd, Int32(SHUT_WR))
            case .close(let reason):
                closeSocket(reason: reason)
            case .log(let level, let message, let metadata):
                server.logger.log(level: level, "\(message)", metadata: metadata, source: HTTPServer.logSource)
            case .logRequest(let line):
                server.requestLog.log(line)
            case .count(let counter):
                count(counter, in: server.metrics)
            }
        }
        if wroteSomething && interest & Epoll.out == 0 && !flushing { flush() }
        updateInterest()
    }

    private func count(_ counter: ConnectionMachine.Counter, in metrics: ServerMetrics) {
        switch counter {
        case .request: metrics.requests.add(1, ordering: .relaxed)
        case .badRequest: metrics.badRequests.add(1, ordering: .relaxed)
        case .timeout: metrics.timeouts.add(1, ordering: .relaxed)
        case .eventSent: loop.counters.eventsSent.add(1, ordering: .relaxed)
        case .streamOverflow: metrics.streamOverflows.add(1, ordering: .relaxed)
        case .streamOpened: metrics.streamsOpen.add(1, ordering: .relaxed)
        }
    }

    /// What a response that opens an event stream brings: the handler's start closure and the request.
    struct StreamOpening {
        var start: @Sendable (any EventSink) -> Void
        /// The request's path as sent (``HTTPRequest/rawPath``: never a decoded line break in a log).
        var path: String
        /// The handler's metadata for the stream's log lines.
        var logMetadata: Logger.Metadata
        /// The stream's events are gzipped.
        var gzip: Bool
    }

    private func openStream(_ opening: StreamOpening) {
        let stream = EventStream(id: id, path: opening.path, loop: loop, gzip: opening.gzip)
        self.stream = stream
        streamLogMetadata = StreamLogMetadata(opening.logMetadata)
        if isClosed {
            stream.terminate()  // gone while it opened: its owner learns at once
        }
        opening.start(stream)
    }

    /// The handler's response, prepared off the loop (loop thread).
    func respond(_ response: PreparedResponse, request: HTTPRequest) {
        // An idle subscriber keeps only what the disconnect line needs: the handler's metadata as it
        // is (shared, not copied) and the path, whose storage the request's strings share.
        let opening = response.stream.map { start in StreamOpening(start: start, path: request.rawPath, logMetadata: response.logMetadata, gzip: response.gzipStream) }
        perform(machine.respond(response, now: EventLoop.now(), date: loop.dateHeader()), opening: opening)
    }

    /// Answers at once without reading a request (a cap).
    func refuse(_ response: HTTPResponse) {
        perform(machine.refuse(response, now: EventLoop.now(), date: loop.dateHeader()))
    }

    // MARK: Event streams

    /// Queues one event of a fan-out: the common case (the bytes go straight to the socket) builds no
    /// action list and, when nothing is waiting, no output queue either.
    /// - Parameter number: the event's number among its stream's ``EventStream/send(_:)`` calls (nil:
    ///   a broadcast), reported when it is the one that overflows the stream.
    func enqueueEvent(_ payload: EventPayload, now: Double, number: Int? = nil) {
        switch machine.sendEvent(payload, now: now) {
        case .write(let bytes):
            loop.counters.eventsSent.add(1, ordering: .relaxed)
            if outputHead == output.count && !flushing && interest & Epoll.out == 0 {
                writeDirectly(bytes, now: now)
            } else {
                output.append(bytes)
                if interest & Epoll.out == 0 && !flushing { flush() }
                updateInterest()
            }
        case .overflowed(let actions):
            perform(actions)
            if let number { stream?.reportOverflow(at: number) }
        case .dropped:
            break
        }
        scheduleTimer()
    }

    func enqueueEvent(_ payload: EventPayload, number: Int? = nil) { enqueueEvent(payload, now: EventLoop.now(), number: number) }
    func resumeStream(with payload: EventPayload) { perform(machine.resume(with: payload, now: EventLoop.now())) }
    func endStream(with final: EventPayload? = nil) { perform(machine.endStream(with: final, now: EventLoop.now())) }
    func tick(now: Double) { perform(machine.tick(now: now, date: loop.dateHeader())) }

    /// Queues the connection in its loop's timers if its machine's next deadline comes before the one
    /// it is queued at (a later deadline is found when the earlier entry comes due).
    private func scheduleTimer() {
        guard let deadline = ConnectionMachine.nextDeadline(of: &machine) else { return }
        guard LoopTimers.needsEntry(at: deadline, queuedAt: timerDeadline) else { return }
        timerDeadline = deadline
        loop.scheduleTimer(at: deadline, for: id)
    }
    func beginShutdown() { perform(machine.beginShutdown(now: EventLoop.now())) }
    func close(reason: String) { perform(machine.close(reason: reason)) }

    // MARK: Writing

    private func flush() {
        flushing = true
        defer { flushing = false }
        while outputHead < output.count, !isClosed {
            let chunk = output[outputHead]
            var count = 0
            if outputOffset < chunk.count {  // (an empty chunk is just passed over)
                guard let sent = send(chunk, from: outputOffset) else { return }
                guard sent > 0 else {
                    updateInterest()
                    return
                }
                count = sent
            }
            outputOffset += count
            if outputOffset == chunk.count {
                output[outputHead] = []
                outputHead += 1
                outputOffset = 0
            }
            if outputHead == output.count {
                output = []  // an idle connection keeps no queue (most subscribers are idle most of the time)
                outputHead = 0
            }
            if count > 0 { perform(machine.wrote(count, now: EventLoop.now())) }
        }
    }

    /// Writes an event's bytes with nothing queued before them; queues what the socket does not take.
    private func writeDirectly(_ bytes: [UInt8], now: Double) {
        guard let count = send(bytes, from: 0) else { return }
        if count < bytes.count {
            output = [bytes]
            outputHead = 0
            outputOffset = count
        }
        if count > 0 { perform(machine.wrote(count, now: now)) }
        if count < bytes.count { updateInterest() }
    }

    /// One write of `bytes[offset...]` to the socket: the number of bytes taken (0: it would block), or
    /// nil when the connection is gone (a write error or the peer closed; the machine has been told).
    private func send(_ bytes: [UInt8], from offset: Int) -> Int? {
        let result: Socket.IOResult
        do {
            result = try bytes.withUnsafeBytes { buffer throws(SystemError) in
                try transport.write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            }
        } catch {
            loop.server.logger.debug("connection \(id): \(error)", source: HTTPServer.logSource)
            perform(machine.peerClosed(reason: "write error"))
            return nil
        }
        switch result {
        case .bytes(let count):
            loop.counters.bytesSent.add(count, ordering: .relaxed)
            return count
        case .wouldBlock:
            return 0
        case .closed:
            perform(machine.peerClosed())
            return nil
        }
    }

    /// The machine said close: release everything (exactly once).
    private func closeSocket(reason: String) {
        loop.loop.deregister(fd)
        transport.release()
        Glibc.close(fd)
        output = []
        outputHead = 0
        outputOffset = 0
        loop.connectionClosed(self)
        if let stream {
            loop.server.metrics.streamsOpen.subtract(1, ordering: .relaxed)
            var metadata = streamLogMetadata.metadata
            metadata["connection"] = "\(id)"
            metadata["path"] = "\(stream.path)"
            metadata["reason"] = "\(reason)"
            loop.server.logger.info("sse disconnect #\(id) \(stream.path) (\(reason))", metadata: metadata, source: HTTPServer.logSource)
            stream.terminate()
        }
    }
}
