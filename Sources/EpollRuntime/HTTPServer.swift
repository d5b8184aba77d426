#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import Foundation
import Logging
import LogLines
import Synchronization

/// A minimal HTTP/1.1 server with Server-Sent Events, on POSIX sockets and N epoll loops (one thread
/// each; the first also accepts and hands connections out round-robin).
///
/// ```swift
/// let server = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 8080))
/// try server.start { request in
///     HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: Array("hi\n".utf8))
/// }
/// ```
///
/// Handlers are `async` and run on Swift's concurrency pool, where responses are also compressed;
/// connection I/O stays on the loop thread that owns the connection.
public final class HTTPServer: EventBroadcaster {
    /// The source of the runtime's log lines: the module's name before it was renamed `EpollRuntime`
    /// (issue 36), kept because deployments filter their logs on it.
    static let logSource = "HTTPServer"
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// Everything that can be set about a server.
    public struct Configuration: Sendable {
        public var host: String
        public var port: UInt16
        public var limits: HTTPLimits
        /// The most simultaneous connections; more are answered 503 and closed.
        public var maxConnections: Int
        /// The most simultaneous connections from one IP address; more are answered 503 and closed.
        /// 0 turns this cap off (behind a reverse proxy every client has the proxy's address).
        public var maxConnectionsPerAddress: Int
        /// The most bytes queued to one event stream before it counts as fallen behind.
        public var streamBufferLimit: Int
        /// gzip responses and event streams for clients that accept it.
        public var compression: Bool
        /// Bodies smaller than this stay uncompressed.
        public var minimumCompressedSize: Int
        /// A comment is sent on event streams idle for this many seconds.
        public var heartbeat: Double
        /// TLS, or nil for plain HTTP.
        public var tls: TLSConfiguration?
        /// The number of event loops (threads serving sockets); at least 1. The default is one per core.
        public var loops: Int
        /// Where the server's log lines go (requests, stream connects and disconnects, errors).
        public var logger: Logger

        public init(
            host: String = "127.0.0.1", port: UInt16 = 8080, limits: HTTPLimits = HTTPLimits(), maxConnections: Int = 10_000,
            maxConnectionsPerAddress: Int = 256,
            streamBufferLimit: Int = 1 << 20, compression: Bool = true, minimumCompressedSize: Int = 1024,
            heartbeat: Double = 15, tls: TLSConfiguration? = nil, loops: Int = ProcessInfo.processInfo.activeProcessorCount,
            logger: Logger = Logger(label: "http")
        ) {
            self.host = host
            self.port = port
            self.limits = limits
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.streamBufferLimit = streamBufferLimit
            self.compression = compression
            self.minimumCompressedSize = minimumCompressedSize
            self.heartbeat = heartbeat
            self.tls = tls
            self.loops = max(1, loops)
            self.logger = logger
        }
    }

    let core: ServerCore

    /// Creates a server; nothing is bound until ``start(handler:)``. Fails if TLS cannot be set up.
    public init(configuration: Configuration) throws {
        core = try ServerCore(configuration: configuration)
    }

    /// Binds, listens and starts serving requests with `handler`. Returns the port (useful with port 0).
    @discardableResult
    public func start(handler: @escaping Handler) throws -> UInt16 {
        try core.start(handler: handler)
    }

    /// The bound port.
    public var port: UInt16 { core.boundPort.load(ordering: .acquiring) }

    public var metrics: ServerMetrics { core.metrics }

    /// Queues one event to many streams: the payload is deflated (if compression is on) here, once,
    /// off the loops; then each loop that owns some of the streams gets one hop with their ids and
    /// writes the same shared bytes to each.
    ///
    /// `written`, if given, is called once, on the loop that finishes last, when every loop has written
    /// the event to (or queued it for) each of its streams; never when `streams` is empty.
    /// - Complexity: O(streams) here, then O(streams on the loop) on each loop, in parallel.
    /// Sinks that are not this server's streams are sent the event one by one.
    public func broadcast(_ payload: EventPayload, to streams: [any EventSink], written: (@Sendable () -> Void)?) {
        guard !streams.isEmpty else { return }
        if core.configuration.compression { payload.prepareDeflated() }
        var byLoop: [[Int]] = Array(repeating: [], count: core.loops.count)
        for sink in streams {
            if let stream = sink as? EventStream, stream.loop.server === core {
                byLoop[stream.loop.index].append(stream.id)
            } else {
                sink.send(payload)
            }
        }
        let loops = byLoop.count { !$0.isEmpty }
        if loops == 0 {
            written?()
            return
        }
        let countdown = written.map { LoopCountdown(loops: loops, done: $0) }
        for (index, ids) in byLoop.enumerated() where !ids.isEmpty {
            let loop = core.loops[index]
            loop.loop.execute { [loop] in loop.fanOut(payload, to: ids, written: countdown) }
        }
    }

    /// Stops accepting, ends event streams, lets responses in flight finish, closes the rest; calls
    /// `completion` when every connection of every loop is closed or after `timeout` seconds.
    public func shutdown(timeout: Double = 3, completion: @escaping @Sendable () -> Void) {
        core.shutdown(timeout: timeout, completion: completion)
    }
}

/// Calls `done` when the last of `loops` loops has arrived: one atomic decrement per loop, no lock.
final class LoopCountdown: Sendable {
    private let remaining: Atomic<Int>
    private let done: @Sendable () -> Void

    init(loops: Int, done: @escaping @Sendable () -> Void) {
        remaining = Atomic(loops)
        self.done = done
    }

    func arrive() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done() }
    }
}

/// What every loop of a server shares: the configuration, the handler, the caps, the metrics and TLS.
///
/// `@unchecked Sendable`: `handler` is written once by `start(handler:)` before any loop runs and only
/// read after that; `loops` is filled in `init`; everything else is immutable, atomic or locked.
final class ServerCore: @unchecked Sendable {
    let configuration: HTTPServer.Configuration
    let machineSettings: ConnectionMachine.SharedSettings
    private(set) var handler: HTTPServer.Handler = { _ in HTTPResponse(status: .serviceUnavailable) }
    let logger: Logger
    /// The logger's handler when it is a ``LineLogHandler`` that adds no metadata of its own: request
    /// lines are written through it directly from their fields, without a swift-log metadata
    /// dictionary or a `String` per field.
    let lineLog: LineLogHandler?
    let metrics: ServerMetrics
    let boundPort = Atomic<UInt16>(0)
    let tlsContext: TLSContext?
    let quota: SharedConnectionQuota
    private(set) var loops: [LoopCore] = []
    private let nextConnectionID = Atomic<Int>(1)

    init(configuration: HTTPServer.Configuration) throws {
        self.configuration = configuration
        self.logger = configuration.logger
        self.lineLog = (configuration.logger.handler as? LineLogHandler).flatMap { $0.writesLinesDirectly ? $0 : nil }
        self.metrics = ServerMetrics(loops: configuration.loops)
        self.machineSettings = ConnectionMachine.SharedSettings(ConnectionMachine.Settings(
            limits: configuration.limits, compression: configuration.compression, minimumCompressedSize: configuration.minimumCompressedSize,
            heartbeat: configuration.heartbeat, streamBufferLimit: configuration.streamBufferLimit))
        self.tlsContext = try configuration.tls.map { try TLSContext(configuration: $0) }
        self.quota = SharedConnectionQuota(ConnectionQuota(maxConnections: configuration.maxConnections,
                                                           maxPerAddress: configuration.maxConnectionsPerAddress))
        for index in 0..<max(1, configuration.loops) {
            loops.append(try LoopCore(index: index, server: self))
        }
    }

    /// A new connection id, unique across loops.
    func makeConnectionID() -> Int { nextConnectionID.add(1, ordering: .relaxed).oldValue }

    func start(handler: @escaping HTTPServer.Handler) throws -> UInt16 {
        self.handler = handler
        let fd = try Socket.listen(host: configuration.host, port: configuration.port)
        let port = Socket.localPort(fd)
        boundPort.store(port, ordering: .releasing)
        for loop in loops { loop.start() }
        // The first loop accepts; registering happens on its thread.
        let acceptor = loops[0]
        let registered = Mutex<Result<Void, SystemError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        acceptor.loop.execute { [acceptor] in
            do throws(SystemError) {
                try acceptor.listen(on: fd)
                registered.withLock { $0 = .success(()) }
            } catch {
                registered.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        if case .failure(let error)? = registered.withLock({ $0 }) { throw error }
        return port
    }

    func shutdown(timeout: Double, completion: @escaping @Sendable () -> Void) {
        let remaining = Atomic<Int>(loops.count)
        let acceptor = loops[0]
        acceptor.loop.execute { [loops] in
            acceptor.closeListeners()  // first: nothing new is handed out after this
            for loop in loops {
                loop.loop.execute {
                    loop.beginShutdown(timeout: timeout) {
                        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { completion() }
                    }
                }
            }
        }
    }
}

/// One event loop and the connections it owns: their table, the shared read buffer, timers, and (on
/// the first loop) the listening socket.
///
/// `@unchecked Sendable`: apart from `index`, `server` and `loop` (immutable), every property is read
/// and written on this loop's thread only (work from elsewhere is sent there with `loop.execute`).
final class LoopCore: @unchecked Sendable {
    let index: Int
    unowned let server: ServerCore
    let loop: EventLoop
    /// This loop's own counters (events and bytes sent, open connections).
    let counters: ServerMetrics.LoopCounters

    private var listeners: [Int32] = []
    private var listenerHandlers: [ListenerHandler] = []
    private var connections: [Int: Connection] = [:]
    /// When each connection next needs its machine ticked (timeouts, heartbeats), earliest first.
    private var timers = DeadlineQueue()
    private var nextHandoff = 0
    private var acceptPausedUntil: Double?
    private(set) var isShuttingDown = false
    private var shutdownDeadline: Double?
    private var shutdownCompletion: (@Sendable () -> Void)?
    private var cachedDate: (second: Int, text: String) = (0, "")
    /// One read buffer for all of this loop's connections: reads happen one at a time on its thread.
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(index: Int, server: ServerCore) throws {
        self.index = index
        self.server = server
        self.counters = server.metrics.perLoop[index]
        self.loop = try EventLoop()
    }

    func start() {
        loop.onTick = { [unowned self] now in self.tick(now: now) }
        loop.start(name: "diffstream-loop-\(index)")
    }

    func stream(_ id: Int) -> Connection? {
        guard let connection = connections[id], connection.stream != nil else { return nil }
        return connection
    }

    /// How many subscribers one turn of a fan-out writes before the loop serves its other work
    /// (readiness, responses, accepts): a batch to 10,000 subscribers must not hold up the answer to
    /// the request that published it, nor anyone else's, for the whole fan-out.
    static let fanOutSlice = 256

    /// Work for this loop's event streams, in the order it arrived: fan-outs (written a slice per turn)
    /// and single-stream operations (an event, a resync, the end) that must not overtake them.
    private enum StreamWork {
        /// `written` arrives once the last of `ids` has the event.
        case fanOut(EventPayload, ids: [Int], next: Int, written: LoopCountdown?)
        case one(Int, (Connection) -> Void)
    }
    private var streamWork: [StreamWork] = []
    private var streamWorkHead = 0

    /// Writes `payload` to this loop's streams `ids`, a slice per turn, after any stream work queued
    /// before it. Every subscriber gets its events, and the end of its stream, in the order they were
    /// sent, while other connections are served between slices.
    /// - Complexity: O(`fanOutSlice`) per turn of the loop.
    func fanOut(_ payload: EventPayload, to ids: [Int], written: LoopCountdown? = nil) {
        streamWork.append(.fanOut(payload, ids: ids, next: 0, written: written))
        if streamWork.count - streamWorkHead == 1 { drainStreamWork() }  // else a drain is already scheduled
    }

    /// Runs `operation` on stream `id` once the stream work queued before it is done (at once if none).
    func streamOperation(_ id: Int, _ operation: @escaping (Connection) -> Void) {
        if streamWorkHead == streamWork.count {
            if let connection = stream(id) { operation(connection) }
            return
        }
        streamWork.append(.one(id, operation))
    }

    /// One turn of stream work: at most `fanOutSlice` streams; what is left is scheduled for the next
    /// turn (there is exactly one such scheduled drain while work is queued).
    private func drainStreamWork() {
        var budget = Self.fanOutSlice
        let now = EventLoop.now()
        while budget > 0, streamWorkHead < streamWork.count {
            switch streamWork[streamWorkHead] {
            case .one(let id, let operation):
                if let connection = stream(id) { operation(connection) }
                budget -= 1
                streamWorkHead += 1
            case .fanOut(let payload, let ids, let next, let written):
                let end = min(ids.count, next + budget)
                for id in ids[next..<end] { stream(id)?.enqueueEvent(payload, now: now) }
                budget -= end - next
                if end == ids.count {
                    streamWorkHead += 1
                    written?.arrive()  // this loop's last slice: every one of its streams has the event
                } else {
                    streamWork[streamWorkHead] = .fanOut(payload, ids: ids, next: end, written: written)
                }
            }
        }
        if streamWorkHead == streamWork.count {
            streamWork = []
            streamWorkHead = 0
        } else {
            loop.execute { [self] in drainStreamWork() }
        }
    }

    // MARK: Accepting (first loop only)

    func listen(on fd: Int32) throws(SystemError) {
        let listener = ListenerHandler(fd: fd, loop: self)
        try loop.register(fd, events: Epoll.`in`, handler: listener)
        listeners.append(fd)
        listenerHandlers.append(listener)
    }

    func closeListeners() {
        for fd in listeners {
            loop.deregister(fd)
            close(fd)
        }
        listeners.removeAll()
        listenerHandlers.removeAll()
    }

    func acceptConnections(from listener: Int32) {
        if let until = acceptPausedUntil, EventLoop.now() < until { return }
        let metrics = server.metrics
        for _ in 0..<256 {
            let fd: Int32
            do {
                guard let accepted = try Socket.accept(listener) else { return }
                fd = accepted
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                    // Out of descriptors: stop accepting for a moment instead of spinning or dying.
                    server.logger.warning("\(error): pausing accept for 100 ms", source: HTTPServer.logSource)
                    acceptPausedUntil = EventLoop.now() + 0.1
                    loop.modify(listener, events: 0)
                } else {
                    server.logger.error("\(error)", source: HTTPServer.logSource)
                }
                return
            }
            if isShuttingDown {
                close(fd)
                continue
            }
            let peer = Self.peerAddress(fd)
            let verdict = server.quota.admit(address: peer.host)
            if verdict == .drop {
                close(fd)  // far over a cap: not even a 503
                metrics.connectionsRefused.add(1, ordering: .relaxed)
                continue
            }
            // Round-robin over the loops; a refused connection stays here (it only gets a 503).
            let target: LoopCore
            if verdict == .admit {
                target = server.loops[nextHandoff % server.loops.count]
                nextHandoff &+= 1
            } else {
                target = self
            }
            if target === self {
                adopt(fd: fd, peer: peer, verdict: verdict)
            } else {
                target.loop.execute { [target] in target.adopt(fd: fd, peer: peer, verdict: verdict) }
            }
        }
    }

    /// Takes ownership of an accepted socket (this loop's thread).
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
        switch verdict {
        case .admit, .drop:
            break
        case .refuseServerFull:
            // Answered like any response, with a lingering close, so the client reads the 503
            // instead of a reset.
            metrics.connectionsRefused.add(1, ordering: .relaxed)
            connection.refuse(.error(.serviceUnavailable, "service unavailable", detail: "the server is at its connection limit; retry later",
                                     headers: ["Connection": "close", "Retry-After": "1"]))
        case .refuseAddressFull:
            metrics.connectionsRefused.add(1, ordering: .relaxed)
            metrics.connectionsRefusedPerAddress.add(1, ordering: .relaxed)
            let cap = server.configuration.maxConnectionsPerAddress
            server.logger.warning("refused a connection from \(peer.host): \(cap) connections from that address are open", source: HTTPServer.logSource)
            connection.refuse(.error(.serviceUnavailable, "service unavailable",
                                     detail: "too many connections from your address (at most \(cap)); close some and retry",
                                     headers: ["Connection": "close", "Retry-After": "1"]))
        }
    }

    /// The peer's numeric host and port, or "?" for what cannot be read.
    static func peerAddress(_ fd: Int32) -> (host: String, port: String) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        guard ok == 0 else { return ("?", "?") }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard status == 0 else { return ("?", "?") }
        return (String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
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

    /// Runs the handler on the concurrency pool and prepares (compresses) its response there; only the
    /// ready bytes come back to this loop.
    func dispatch(_ request: HTTPRequest, info: RequestInfo, connection: Connection) {
        let handler = server.handler
        let minimumCompressedSize = server.configuration.minimumCompressedSize
        let id = connection.id
        Task { [self] in
            let response = await handler(request)
            let prepared = PreparedResponse.prepare(response, for: info, compressAbove: minimumCompressedSize)
            loop.execute { [self] in
                connections[id]?.respond(prepared, request: request)
            }
        }
    }

    func dateHeader() -> String {
        let second = Int(time(nil))
        if cachedDate.second != second { cachedDate = (second, httpDate()) }
        return cachedDate.text
    }

    // MARK: Timers

    /// Ticks connection `id` once `deadline` has come (called by the connection).
    func scheduleTimer(at deadline: Double, for id: Int) {
        timers.push(deadline, id: id)
    }

    private func tick(now: Double) {
        if let until = acceptPausedUntil, now >= until {
            acceptPausedUntil = nil
            for fd in listeners { loop.modify(fd, events: Epoll.`in`) }
        }
        var due: [Connection] = []
        while let entry = timers.popDue(now: now) {
            // Stale entries (the connection is gone, or was queued again at another deadline) are skipped.
            guard let connection = connections[entry.id], connection.timerDeadline == entry.deadline else { continue }
            connection.timerDeadline = nil
            due.append(connection)
        }
        // Ticked after the queue is drained: one that is due again at once waits for the next tick.
        for connection in due { connection.tick(now: now) }
        if timers.count > 2 * connections.count + 1024 {
            timers.rebuild(from: connections.values.compactMap { connection in
                connection.timerDeadline.map { DeadlineQueue.Entry(deadline: $0, id: connection.id) }
            })
        }
        if isShuttingDown, let deadline = shutdownDeadline, connections.isEmpty || now >= deadline {
            for connection in Array(connections.values) { connection.close(reason: "shutdown") }
            shutdownDeadline = nil
            loop.stop()
            let completion = shutdownCompletion
            shutdownCompletion = nil
            completion?()
        }
    }

    func beginShutdown(timeout: Double, completion: @escaping @Sendable () -> Void) {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        shutdownDeadline = EventLoop.now() + timeout
        shutdownCompletion = completion
        closeListeners()
        for connection in Array(connections.values) { connection.beginShutdown() }
    }
}

/// Accepts connections when its listening socket is readable.
///
/// `@unchecked Sendable`: created and used on the first loop's thread only.
final class ListenerHandler: EventHandler, @unchecked Sendable {
    let fd: Int32
    unowned let loop: LoopCore
    init(fd: Int32, loop: LoopCore) {
        self.fd = fd
        self.loop = loop
    }
    func handle(events: UInt32) { loop.acceptConnections(from: fd) }
}

/// A request's line is written straight into a ``LineLogHandler``'s line.
extension LogLineWriter: RequestLogLineSink {}
