import Dispatch
import Logging
import Synchronization

/// What every loop of a server shares: the configuration, the handler, the caps, the metrics and TLS;
/// and the server's start and shutdown, which it runs on its loops.
///
/// `@unchecked Sendable`: `handler` is written once by `start(handler:)` before any loop runs (the
/// loops' threads are started after it) and only read after that; `loops` is filled in `init` and
/// never changed; everything else is immutable, atomic or locked. Neither can be a `let`: the loops
/// refer back to this object, so they are made after it is.
final class ServerCore: @unchecked Sendable {
    let configuration: HTTPServer.Configuration
    /// ``HTTPServer/Configuration/minimumCompressedSize``, read once: each request reads it, and
    /// reading it through `configuration` copied the whole configuration (its request log an existential).
    let minimumCompressedSize: Int
    let machineSettings: ConnectionMachine.SharedSettings
    private(set) var handler: HTTPServer.Handler = { _ in HTTPResponse(status: .serviceUnavailable) }
    let logger: Logger
    /// Where request lines go (``HTTPServer/Configuration/requestLog``, else through ``logger``).
    let requestLog: any RequestLog
    let metrics: ServerMetrics
    let boundPort = Atomic<UInt16>(0)
    let tlsContext: TLSContext?
    let quota: SharedConnectionQuota
    private(set) var loops: [LoopCore] = []
    private let nextConnectionID = Atomic<Int>(1)

    init(configuration: HTTPServer.Configuration) throws {
        self.configuration = configuration
        self.minimumCompressedSize = configuration.minimumCompressedSize
        self.logger = configuration.logger
        self.requestLog = configuration.requestLog ?? LoggerRequestLog(configuration.logger, source: HTTPServer.logSource)
        self.metrics = ServerMetrics(loops: configuration.loops)
        self.machineSettings = ConnectionMachine.SharedSettings(ConnectionMachine.Settings(
            limits: configuration.limits, compression: configuration.compression, minimumCompressedSize: configuration.minimumCompressedSize,
            heartbeat: configuration.heartbeat, streamBufferLimit: configuration.streamBufferLimit))
        self.tlsContext = try configuration.tls.map { try TLSContext(configuration: $0) }
        self.quota = SharedConnectionQuota(ConnectionQuota(maxConnections: configuration.maxConnections,
                                                           maxPerAddress: configuration.maxConnectionsPerAddress))
        let count = max(1, configuration.loops)
        for index in 0..<count {
            loops.append(try LoopCore(index: index, server: self, loops: count))
        }
    }

    /// A new connection id, unique across loops.
    func makeConnectionID() -> Int { nextConnectionID.add(1, ordering: .relaxed).oldValue }

    /// Binds, starts every loop, and has the first loop watch the listening socket; returns once it
    /// does (or throws what registering it threw).
    func start(handler: @escaping HTTPServer.Handler) throws -> UInt16 {
        self.handler = handler
        let fd = try Socket.listen(host: configuration.host, port: configuration.port)
        let port = Socket.localPort(fd)
        boundPort.store(port, ordering: .releasing)
        for loop in loops { loop.start() }
        // The first loop accepts; registering happens on its thread.
        let first = loops[0]
        let registered = Mutex<Result<Void, SystemError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        first.loop.execute { [first] in
            do throws(SystemError) {
                try first.acceptor?.listen(on: fd)
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

    /// Closes the listener first (on the first loop: nothing new is handed out after this), then has
    /// every loop begin its shutdown; `completion` runs when the last loop has finished.
    func shutdown(timeout: Double, completion: @escaping @Sendable () -> Void) {
        let finished = LoopCountdown(loops: loops.count, done: completion)
        let first = loops[0]
        first.loop.execute { [loops] in
            first.acceptor?.closeListeners()  // first: nothing new is handed out after this
            for loop in loops {
                loop.loop.execute {
                    loop.beginShutdown(timeout: timeout) { finished.arrive() }
                }
            }
        }
    }
}
