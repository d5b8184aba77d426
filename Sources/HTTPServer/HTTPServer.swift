#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import Foundation
import Synchronization

/// A minimal HTTP/1.1 server with Server-Sent Events, on POSIX sockets and one epoll loop.
///
/// ```swift
/// let server = try HTTPServer(configuration: .init(host: "127.0.0.1", port: 8080))
/// try server.start { request in
///     HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: Array("hi\n".utf8))
/// }
/// ```
///
/// Handlers are `async` and run on Swift's concurrency pool; connection I/O stays on the loop thread.
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse

    /// Everything that can be set about a server.
    public struct Configuration: Sendable {
        public var host: String
        public var port: UInt16
        public var limits: HTTPLimits
        /// The most simultaneous connections; more are answered 503 and closed.
        public var maxConnections: Int
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
        public var logger: Logger

        public init(
            host: String = "127.0.0.1", port: UInt16 = 8080, limits: HTTPLimits = HTTPLimits(), maxConnections: Int = 10_000,
            streamBufferLimit: Int = 1 << 20, compression: Bool = true, minimumCompressedSize: Int = 1024,
            heartbeat: Double = 15, tls: TLSConfiguration? = nil, logger: Logger = Logger(label: "http")
        ) {
            self.host = host
            self.port = port
            self.limits = limits
            self.maxConnections = maxConnections
            self.streamBufferLimit = streamBufferLimit
            self.compression = compression
            self.minimumCompressedSize = minimumCompressedSize
            self.heartbeat = heartbeat
            self.tls = tls
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

    /// Queues one event to many streams in a single hop to the loop: the payload's bytes are shared.
    public func broadcast(_ payload: EventPayload, to streams: [EventStream]) {
        guard !streams.isEmpty else { return }
        let ids = streams.map(\.id)
        core.loop.execute { [core] in
            for id in ids { core.stream(id)?.enqueueEvent(payload) }
        }
    }

    /// Stops accepting, ends event streams, lets responses in flight finish, closes the rest; calls
    /// `completion` when every connection is closed or after `timeout` seconds.
    public func shutdown(timeout: Double = 3, completion: @escaping @Sendable () -> Void) {
        core.loop.execute { [core] in core.beginShutdown(timeout: timeout, completion: completion) }
    }
}

/// The server's loop-owned state: listeners, connections and timers.
///
/// `@unchecked Sendable`: apart from the immutable configuration, the atomics and the metrics, every
/// property is read and written on the event loop's thread only (work from elsewhere is sent there
/// with `loop.execute`).
final class ServerCore: @unchecked Sendable {
    let configuration: HTTPServer.Configuration
    /// Set once by `start(handler:)` before the loop runs; read on the loop thread after that.
    private(set) var handler: HTTPServer.Handler = { _ in HTTPResponse(status: .serviceUnavailable) }
    let loop: EventLoop
    let logger: Logger
    let metrics = ServerMetrics()
    let boundPort = Atomic<UInt16>(0)
    let tlsContext: TLSContext?

    private var listeners: [Int32] = []
    private var listenerHandlers: [ListenerHandler] = []
    private var connections: [Int: Connection] = [:]
    private var nextConnectionID = 1
    private var acceptPausedUntil: Double?
    private(set) var isShuttingDown = false
    private var shutdownDeadline: Double?
    private var shutdownCompletion: (@Sendable () -> Void)?
    private var lastHeartbeatSweep: Double = 0
    private let heartbeatPayload = EventPayload(ServerSentEvent.comment("heartbeat"))
    private var cachedDate: (second: Int, text: String) = (0, "")
    /// One read buffer for all connections: reads happen one at a time on the loop thread.
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(configuration: HTTPServer.Configuration) throws {
        self.configuration = configuration
        self.logger = configuration.logger
        self.loop = try EventLoop()
        self.tlsContext = try configuration.tls.map { try TLSContext(configuration: $0) }
    }

    func start(handler: @escaping HTTPServer.Handler) throws -> UInt16 {
        self.handler = handler
        let fd = try Socket.listen(host: configuration.host, port: configuration.port)
        let port = Socket.localPort(fd)
        boundPort.store(port, ordering: .releasing)
        let listener = ListenerHandler(fd: fd, core: self)
        loop.onTick = { [unowned self] now in self.tick(now: now) }
        let registered = Mutex<Result<Void, SystemError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.start(name: "diffstream-loop")
        loop.execute { [self] in
            do throws(SystemError) {
                try loop.register(fd, events: Epoll.`in`, handler: listener)
                listeners.append(fd)
                listenerHandlers.append(listener)
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

    func stream(_ id: Int) -> Connection? {
        guard let connection = connections[id], connection.stream != nil else { return nil }
        return connection
    }

    // MARK: Accepting

    func acceptConnections(from listener: Int32) {
        if let until = acceptPausedUntil, EventLoop.now() < until { return }
        for _ in 0..<256 {
            let fd: Int32
            do {
                guard let accepted = try Socket.accept(listener) else { return }
                fd = accepted
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                    // Out of descriptors: stop accepting for a moment instead of spinning or dying.
                    logger.warning("\(error): pausing accept for 100 ms")
                    acceptPausedUntil = EventLoop.now() + 0.1
                    loop.modify(listener, events: 0)
                } else {
                    logger.error("\(error)")
                }
                return
            }
            let refuse = connections.count >= configuration.maxConnections || isShuttingDown
            if refuse && connections.count >= configuration.maxConnections + 64 {
                close(fd)  // far over the cap: not even a 503
                metrics.connectionsRefused.add(1, ordering: .relaxed)
                continue
            }
            let transport: Transport
            if let tlsContext {
                guard let tls = tlsContext.makeTransport(fd: fd) else { close(fd); continue }
                transport = tls
            } else {
                transport = PlainTransport(fd: fd)
            }
            let id = nextConnectionID
            nextConnectionID += 1
            let connection = Connection(id: id, fd: fd, core: self, transport: transport, remote: Self.peerName(fd), now: EventLoop.now())
            connections[id] = connection
            metrics.connectionsAccepted.add(1, ordering: .relaxed)
            metrics.connectionsOpen.store(connections.count, ordering: .relaxed)
            do {
                try connection.start()
            } catch {
                logger.error("\(error)")
                connection.close(reason: "register failed")
                continue
            }
            if refuse {
                // Answered like any response, with a lingering close, so the client reads the 503
                // instead of a reset.
                metrics.connectionsRefused.add(1, ordering: .relaxed)
                connection.refuse(.error(.serviceUnavailable, "service unavailable", detail: "the server is at its connection limit; retry later",
                                         headers: ["Connection": "close", "Retry-After": "1"]))
            }
        }
    }

    static func peerName(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        guard ok == 0 else { return "?" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard status == 0 else { return "?" }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + ":" + String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func connectionClosed(_ connection: Connection) {
        connections[connection.id] = nil
        metrics.connectionsOpen.store(connections.count, ordering: .relaxed)
    }

    // MARK: Requests

    func handle(_ request: HTTPRequest, connection: Connection) {
        let handler = self.handler
        let id = connection.id
        Task { [self] in
            let response = await handler(request)
            loop.execute { [self] in
                connections[id]?.respond(response, request: request)
            }
        }
    }

    func dateHeader() -> String {
        let second = Int(time(nil))
        if cachedDate.second != second { cachedDate = (second, httpDate()) }
        return cachedDate.text
    }

    // MARK: Timers

    private func tick(now: Double) {
        if let until = acceptPausedUntil, now >= until {
            acceptPausedUntil = nil
            for fd in listeners { loop.modify(fd, events: Epoll.`in`) }
        }
        for connection in connections.values { connection.checkTimeouts(now: now) }
        if now - lastHeartbeatSweep >= min(1, configuration.heartbeat / 2) {
            lastHeartbeatSweep = now
            for connection in connections.values where connection.stream != nil && now - connection.lastEventAt >= configuration.heartbeat {
                connection.enqueueEvent(heartbeatPayload)
            }
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
        for fd in listeners {
            loop.deregister(fd)
            close(fd)
        }
        listeners.removeAll()
        for connection in Array(connections.values) { connection.beginShutdown() }
    }
}

/// Accepts connections when its listening socket is readable.
///
/// `@unchecked Sendable`: created off the loop but handed to it once, then used on the loop thread only.
final class ListenerHandler: EventHandler, @unchecked Sendable {
    let fd: Int32
    unowned let core: ServerCore
    init(fd: Int32, core: ServerCore) {
        self.fd = fd
        self.core = core
    }
    func handle(events: UInt32) { core.acceptConnections(from: fd) }
}
