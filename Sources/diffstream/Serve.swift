import Dispatch
import Examples
import FeedServer
import FeedStore
import Foundation
import HTTPServer
import Logging

extension DiffStreamCommand {
    /// Starts the server and runs until SIGINT or SIGTERM, then shuts down gracefully and exits 0.
    func serve(_ settings: Settings) async throws {
        var settings = settings
        let logger = settings.server.logger
        // First, before anything records a metric: bootstraps swift-metrics with the registry /metrics serves.
        let metrics = MetricsEndpoint()
        settings.server.maxConnections = FileLimit.fit(maxConnections: settings.server.maxConnections, logger: logger)
        signal(SIGPIPE, SIG_IGN)
        // Signals are caught from here on, before anyone can know the port: none is ever lost.
        let stop = StopSignal(signals: [SIGINT, SIGTERM])

        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: settings.server)
        } catch {
            throw ConfigurationError(message: "\(error)")
        }
        if let jwt = settings.jwt {
            do {
                settings.api.verifier = try await JWTVerifier(hmacSecret: jwt.secret, publicKeyPEM: jwt.publicKeyPEM)
            } catch {
                throw ConfigurationError(message: error.description)
            }
        }
        let store = try openStore(settings, logger: logger)
        let registry = FeedRegistry(replayLimit: settings.replay, transport: server, store: store?.store, storage: StorageAccount(limits: settings.storage))
        if let store {
            let restoring = Date()
            let skipped = await registry.restore(store.contents.feeds)
            logger.info("\(store.contents.feeds.count - skipped.count) feeds restored in \(Int(Date().timeIntervalSince(restoring) * 1000)) ms")
            guard skipped.isEmpty || settings.setAsideDamaged else {
                let list = skipped.map { "'\($0.name)': \($0.reason)" }.joined(separator: "; ")
                throw ConfigurationError(message: "the data in '\(store.store.directory)' cannot be trusted: \(list); start with --set-aside-damaged to skip those feeds")
            }
            for entry in store.contents.setAside + skipped { logger.warning("set aside damaged data: \(entry.name): \(entry.reason)") }
        }
        let hosted = HostedFeeds(registry: registry)
        do {
            try await Examples.host(settings.examples, on: hosted, demo: settings.demo)
        } catch {
            throw ConfigurationError(message: "\(error)")
        }
        let files: StaticFiles
        do { files = try StaticFiles(root: settings.publicDirectory) } catch { throw ConfigurationError(message: "\(error)") }
        let api = FeedAPI(registry: registry, hosted: hosted, files: files, options: settings.api, serverMetrics: { server.metrics }, metrics: metrics)
        let port: UInt16
        do {
            port = try server.start { request in await api.handle(request) }
        } catch {
            throw ConfigurationError(message: "cannot listen on \(settings.server.host):\(settings.server.port): \(error)")
        }
        let scheme = settings.server.tls == nil ? "http" : "https"
        let shownHost = settings.server.host.contains(":") ? "[\(settings.server.host)]" : settings.server.host
        let listening: Logger.Message = "diffstream listening on \(scheme)://\(shownHost):\(port)"
        if logger.logLevel > .info {
            settings.logging.announcer().info(listening)  // the port is announced even to a quiet log
        } else {
            logger.info(listening)
        }
        if settings.writesClosed {
            logger.warning("bound to the public address \(settings.server.host) without a write credential: PUT, DELETE and PATCH of feeds are refused (403). Start with --token or --jwt-secret-file to allow writes with a credential, or --open-writes to allow them to anyone.")
        }

        let signalNumber = await stop.wait()
        logger.info("signal \(signalNumber): shutting down")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            server.shutdown(timeout: 3) {
                logger.info("shut down")
                continuation.resume()
            }
        }
        store?.store.close()  // writes in flight are finished; the lock is released
        Foundation.exit(0)
    }
}

extension DiffStreamCommand {
    /// Opens, locks and loads the data directory (nil for `--data none`); any problem stops the start
    /// with a message naming the path.
    func openStore(_ settings: Settings, logger: Logger) throws -> (store: LogFeedStore, contents: StoreContents)? {
        guard let directory = settings.dataDirectory else {
            logger.info("--data none: feeds are kept in memory only")
            return nil
        }
        do {
            let started = Date()
            let store = try LogFeedStore(directory: directory, setAsideDamaged: settings.setAsideDamaged)
            let contents = try store.load()
            for note in contents.notes { logger.warning("store: \(note)") }
            logger.info("store \(store.directory): \(contents.feeds.count) feeds loaded in \(Int(Date().timeIntervalSince(started) * 1000)) ms")
            return (store, contents)
        } catch {
            throw ConfigurationError(message: error.description)
        }
    }
}

/// The write end of the pipe the signal handler reports to (-1 until ``StopSignal`` sets it).
/// `nonisolated(unsafe)`: written once, before the handler is installed; read only by the handler.
nonisolated(unsafe) private var stopSignalPipe: Int32 = -1

/// Catches termination signals from its creation on and reports the first one.
///
/// A signal handler writes the signal's number to a pipe (async-signal-safe), and a thread of our own
/// reads it: a signal is never lost whichever thread the kernel delivers it to, even one that arrives
/// while the server is still starting. (libdispatch's signal sources can lose one: they only see a
/// signal that lands on a thread they watch.) The async signals are also kept off the event loops'
/// threads, which block them.
final class StopSignal: @unchecked Sendable {
    // `@unchecked Sendable`: `received` and `waiter` are guarded by `lock`.
    private let lock = NSLock()
    private var received: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?

    init(signals: [Int32]) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            FileHandle.standardError.write(Data("diffstream: pipe() for signal handling failed (errno \(errno)); signals stop the process at once\n".utf8))
            return
        }
        stopSignalPipe = fds[1]
        for signalNumber in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signalNumber in
                var byte = UInt8(truncatingIfNeeded: signalNumber)
                _ = write(stopSignalPipe, &byte, 1)
            }
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(signalNumber, &action, nil)
        }
        let readEnd = fds[0]
        let thread = Thread { [self] in
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) != 1 {}
            self.fire(Int32(byte))
        }
        thread.name = "diffstream-signals"
        thread.start()
    }

    private func fire(_ signalNumber: Int32) {
        lock.lock()
        guard received == nil else { lock.unlock(); return }
        received = signalNumber
        let waiter = self.waiter
        self.waiter = nil
        lock.unlock()
        waiter?.resume(returning: signalNumber)
    }

    /// Returns the first signal, at once if it has already arrived.
    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let received {
                lock.unlock()
                continuation.resume(returning: received)
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }
}

/// The open-file limit: raised to the hard limit, and connections capped to fit under it.
enum FileLimit {
    static func fit(maxConnections: Int, logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return maxConnections }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let reserve = 64  // listeners, epoll, eventfd, static files, logs
        let available = Int(limit.rlim_cur) - reserve
        if maxConnections > available {
            logger.warning("--max-connections \(maxConnections) exceeds what the open-file limit (\(limit.rlim_cur)) allows: serving at most \(available) connections")
            return max(1, available)
        }
        return maxConnections
    }
}
