import Foundation
import Logging
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
/// Handlers are `async`. A small write runs on the loop thread that read it (the loop is a
/// `TaskExecutor`); reads and big writes run on Swift's concurrency pool, where their responses are
/// also compressed. Connection I/O stays on the loop thread that owns the connection.
public final class HTTPServer: EventBroadcaster {
    /// The source of the runtime's log lines: the module's name before it was renamed `EpollRuntime`
    /// (issue 36), kept because deployments filter their logs on it.
    static let logSource = "HTTPServer"
    /// Answers one request: on the loop that read it for a write with a body up to 64 KiB, else on
    /// Swift's concurrency pool. It must not block its thread (await instead).
    public typealias Handler = nonisolated(nonsending) @Sendable (HTTPRequest) async -> HTTPResponse

    /// Everything that can be set about a server.
    public struct Configuration: Sendable {
        /// The address to listen on: an IPv4 or IPv6 literal, or `localhost`.
        public var host: String
        /// The port to listen on; 0 picks a free one (``HTTPServer/port`` tells which).
        public var port: UInt16
        /// The request limits (sizes and timeouts).
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
        /// Where the server's log lines go (stream connects and disconnects, errors; and the request
        /// lines unless ``requestLog`` is set).
        public var logger: Logger
        /// Where the request lines go; nil: through ``logger`` (``LoggerRequestLog``, every field as
        /// metadata).
        public var requestLog: (any RequestLog)?

        /// A configuration; every default is the server's (256 connections per address, one loop per core).
        public init(
            host: String = "127.0.0.1", port: UInt16 = 8080, limits: HTTPLimits = HTTPLimits(), maxConnections: Int = 10_000,
            maxConnectionsPerAddress: Int = 256,
            streamBufferLimit: Int = 1 << 20, compression: Bool = true, minimumCompressedSize: Int = 1024,
            heartbeat: Double = 15, tls: TLSConfiguration? = nil, loops: Int = ProcessInfo.processInfo.activeProcessorCount,
            logger: Logger = Logger(label: "http"), requestLog: (any RequestLog)? = nil
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
            self.requestLog = requestLog
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

    /// The server's counters and gauges (requests, connections, streams, per-loop counts).
    public var metrics: ServerMetrics { core.metrics }

    /// Queues one event to many streams: the payload is deflated (if a stream is gzipped) here, once,
    /// off the loops; then each loop that owns some of the streams gets one hop with their ids and
    /// writes the same shared bytes to each.
    ///
    /// `written`, if given, is called once, on the loop that finishes last, when every loop has written
    /// the event to (or queued it for) each of its streams; never when `streams` is empty.
    /// - Complexity: O(streams) here, then O(streams on the loop) on each loop, in parallel.
    /// Sinks that are not this server's streams are sent the event one by one.
    public func broadcast(_ payload: EventPayload, to streams: [any EventSink], written: (@Sendable () -> Void)?) {
        guard !streams.isEmpty else { return }
        var byLoop: [[Int]] = Array(repeating: [], count: core.loops.count)
        var deflate = false
        for sink in streams {
            if let stream = sink as? EventStream, stream.loop.server === core {
                byLoop[stream.loop.index].append(stream.id)
                deflate = deflate || stream.gzip
            } else {
                sink.send(payload)
            }
        }
        if deflate { payload.prepareDeflated() }  // once, here, before any loop writes it
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
