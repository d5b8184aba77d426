#if canImport(Glibc)
import Glibc
#endif
import Logging

/// One event loop and the connections it owns: their table, the shared read buffer, the stream work
/// (``StreamWorkQueue``), the timers (``LoopTimers``), the shutdown (``LoopShutdown``) and, on the
/// first loop, the ``Acceptor``. The decisions are those pure parts'; this class carries them out on
/// the loop's thread.
///
/// `@unchecked Sendable`: it is handed to other threads only for them to send it work with
/// `loop.execute`. Apart from `index`, `server`, `loop` and `counters` (immutable), every property is
/// read and written on this loop's thread only; `acceptor` is set once in `init`, before the thread
/// starts.
final class LoopCore: @unchecked Sendable {
    let index: Int
    unowned let server: ServerCore
    let loop: EventLoop
    /// This loop's own counters (events and bytes sent, open connections).
    let counters: ServerMetrics.LoopCounters
    /// The listening sockets, on the first loop only.
    private(set) var acceptor: Acceptor?

    private var connections: [Int: Connection] = [:]
    private var timers = LoopTimers()
    private var shutdown = LoopShutdown()
    private var shutdownCompletion: (@Sendable () -> Void)?
    private var cachedDate: (second: Int, text: String) = (0, "")
    /// One read buffer for all of this loop's connections: reads happen one at a time on its thread.
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(index: Int, server: ServerCore, loops: Int) throws {
        self.index = index
        self.server = server
        self.counters = server.metrics.perLoop[index]
        self.loop = try EventLoop()
        if index == 0 { acceptor = Acceptor(loop: self, loops: loops) }
    }

    func start() {
        loop.onTick = { [unowned self] now in self.tick(now: now) }
        loop.start(name: "loop-\(index)")
    }

    /// Whether this loop's shutdown has begun.
    var isShuttingDown: Bool { shutdown.isShuttingDown }

    func stream(_ id: Int) -> Connection? {
        guard let connection = connections[id], connection.stream != nil else { return nil }
        return connection
    }

    // MARK: Stream work

    /// How many subscribers one turn of a fan-out writes before the loop serves its other work
    /// (readiness, responses, accepts): a batch to 10,000 subscribers must not hold up the answer to
    /// the request that published it, nor anyone else's, for the whole fan-out.
    static let fanOutSlice = 256

    /// A fan-out's payload and what to tell once this loop's last slice of it is written.
    typealias FanOut = (payload: EventPayload, written: LoopCountdown?)
    private var streamWork = StreamWorkQueue<FanOut, (Connection) -> Void>()

    /// Writes `payload` to this loop's streams `ids`, a slice per turn, after any stream work queued
    /// before it. Every subscriber gets its events, and the end of its stream, in the order they were
    /// sent, while other connections are served between slices.
    /// - Complexity: O(`fanOutSlice`) per turn of the loop.
    func fanOut(_ payload: EventPayload, to ids: [Int], written: LoopCountdown? = nil) {
        if streamWork.append(fanOut: (payload, written), to: ids) { drainStreamWork() }  // else a turn is already scheduled
    }

    /// Runs `operation` on stream `id` once the stream work queued before it is done (at once if none).
    func streamOperation(_ id: Int, _ operation: @escaping (Connection) -> Void) {
        if streamWork.isIdle {
            if let connection = stream(id) { operation(connection) }
            return
        }
        streamWork.append(operation, on: id)
    }

    /// One turn of stream work: at most `fanOutSlice` streams; what is left is scheduled for the next
    /// turn (there is exactly one such scheduled turn while work is queued).
    private func drainStreamWork() {
        var budget = Self.fanOutSlice
        let now = EventLoop.now()
        while let step = streamWork.nextStep(budget: &budget) {
            switch step {
            case .operation(let operation, let id):
                if let connection = stream(id) { operation(connection) }
            case .fanOut(let fanOut, let ids, let isLast):
                for id in ids { stream(id)?.enqueueEvent(fanOut.payload, now: now) }
                if isLast { fanOut.written?.arrive() }  // this loop's last slice: every one of its streams has the event
            }
        }
        if streamWork.hasWork { loop.execute { [self] in drainStreamWork() } }
    }

    // MARK: Connections

    /// Takes ownership of an accepted socket (this loop's thread): a connection, started, and answered
    /// 503 at once if the caps refused it.
    func adopt(fd: Int32, peer: (host: String, port: String), verdict: ConnectionQuota.Verdict) {
        let metrics = server.metrics
        func release() {
            if verdict == .admit { server.quota.release(address: peer.host) } else { server.quota.releaseRefused() }
        }
        if isShuttingDown {
            close(fd)
            release()
            return
        }
        let transport: Transport
        if let tlsContext = server.tlsContext {
            guard let tls = tlsContext.makeTransport(fd: fd) else {
                close(fd)
                release()
                return
            }
            transport = tls
        } else {
            transport = PlainTransport(fd: fd)
        }
        let connection = Connection(id: server.makeConnectionID(), fd: fd, loop: self, transport: transport, remote: peer.host + ":" + peer.port,
                                    address: peer.host, admitted: verdict == .admit, now: EventLoop.now())
        connections[connection.id] = connection
        metrics.connectionsAccepted.add(1, ordering: .relaxed)
        metrics.connectionsOpen.add(1, ordering: .relaxed)
        counters.connections.add(1, ordering: .relaxed)
        do {
            try connection.start()
        } catch {
            server.logger.error("\(error)", source: HTTPServer.logSource)
            connection.close(reason: "register failed")
            return
        }
        let cap = server.configuration.maxConnectionsPerAddress
        guard let refusal = verdict.refusal(perAddressCap: cap) else { return }
        metrics.connectionsRefused.add(1, ordering: .relaxed)
        if verdict == .refuseAddressFull {
            metrics.connectionsRefusedPerAddress.add(1, ordering: .relaxed)
            server.logger.warning("refused a connection from \(peer.host): \(cap) connections from that address are open", source: HTTPServer.logSource)
        }
        connection.refuse(refusal)
    }

    func connectionClosed(_ connection: Connection) {
        connections[connection.id] = nil
        server.metrics.connectionsOpen.subtract(1, ordering: .relaxed)
        counters.connections.subtract(1, ordering: .relaxed)
        if connection.admitted {
            server.quota.release(address: connection.address)
        } else {
            server.quota.releaseRefused()
        }
    }

    // MARK: Requests

    /// Runs the handler and prepares (compresses) its response. A small write (a body up to
    /// ``inlineBodyLimit``, any method but `GET`, `HEAD` and `OPTIONS`) runs on this loop, together
    /// with the default actors it calls (the feed): no other thread is woken to run it or to hand its
    /// answer back (issue 39). Everything else (reads, whose answers may be large and compressed,
    /// and big writes) runs on the concurrency pool, and only the ready bytes come back to this loop.
    ///
    /// A small write starts at once (`Task.immediate`): it runs on this thread, inside the connection's
    /// read, up to its first suspension (the hop to the feed's actor), without a trip through the
    /// loop's inbox. An answer ready before that call returns waits for the next turn of the inbox, so
    /// that a connection is never answered from inside its own read.
    func dispatch(_ request: HTTPRequest, info: RequestInfo, connection: Connection) {
        let handler = server.handler
        let minimumCompressedSize = server.minimumCompressedSize
        let id = connection.id
        let operation: @Sendable () async -> Void = { [self] in
            let response = await handler(request)
            let prepared = PreparedResponse.prepare(response, for: info, compressAbove: minimumCompressedSize)
            if loop.isCurrent && !startingInline {
                connections[id]?.respond(prepared, request: request)
            } else {
                loop.execute { [self] in connections[id]?.respond(prepared, request: request) }
            }
        }
        if Self.runsOnLoop(method: request.method, bodyBytes: request.body.count) {
            startingInline = true
            Task.immediate(executorPreference: loop, operation: operation)
            startingInline = false
        } else {
            Task(operation: operation)
        }
    }

    /// Whether a request's task is running inside ``dispatch(_:info:connection:)``'s `Task.immediate`
    /// (loop-confined, read only when `loop.isCurrent`).
    private var startingInline = false

    /// Writes with a body up to this size run on the loop that read them; bigger ones on the pool.
    static let inlineBodyLimit = 64 * 1024

    /// Whether a request runs on the loop that read it (see ``dispatch(_:info:connection:)``).
    static func runsOnLoop(method: String, bodyBytes: Int) -> Bool {
        bodyBytes <= inlineBodyLimit && method != "GET" && method != "HEAD" && method != "OPTIONS"
    }

    func dateHeader() -> String {
        let second = Int(time(nil))
        if cachedDate.second != second { cachedDate = (second, httpDate()) }
        return cachedDate.text
    }

    // MARK: Timers

    /// Ticks connection `id` once `deadline` has come (called by the connection).
    func scheduleTimer(at deadline: Double, for id: Int) {
        timers.schedule(deadline, for: id)
    }

    /// The loop's tick (every 100 ms): the accept pause, the connections whose deadline has come, the
    /// shutdown.
    private func tick(now: Double) {
        acceptor?.tick(now: now)
        let dueIDs = timers.popDue(now: now) { connections[$0]?.timerDeadline }
        var due: [Connection] = []
        due.reserveCapacity(dueIDs.count)
        for id in dueIDs {
            guard let connection = connections[id] else { continue }
            connection.timerDeadline = nil
            due.append(connection)
        }
        // Ticked after the queue is drained: one that is due again at once waits for the next tick.
        for connection in due { connection.tick(now: now) }
        if timers.needsRebuild(live: connections.count) {
            timers.rebuild(from: connections.values.compactMap { connection in
                connection.timerDeadline.map { DeadlineQueue.Entry(deadline: $0, id: connection.id) }
            })
        }
        if shutdown.tick(now: now, openConnections: connections.count) {
            for connection in Array(connections.values) { connection.close(reason: "shutdown") }
            loop.stop()
            let completion = shutdownCompletion
            shutdownCompletion = nil
            completion?()
        }
    }

    // MARK: Shutdown

    /// Stops accepting (on the first loop), tells every connection to finish, and calls `completion`
    /// at the tick where none remains or `timeout` seconds have passed. A second call does nothing.
    func beginShutdown(timeout: Double, completion: @escaping @Sendable () -> Void) {
        guard shutdown.begin(now: EventLoop.now(), timeout: timeout) else { return }
        shutdownCompletion = completion
        acceptor?.closeListeners()
        for connection in Array(connections.values) { connection.beginShutdown() }
    }
}
