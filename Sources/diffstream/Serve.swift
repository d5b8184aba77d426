import Dispatch
import FeedServer
import Foundation
import HTTPServer

extension DiffStreamCommand {
    /// Starts the server and runs until SIGINT or SIGTERM, then shuts down gracefully and exits 0.
    func serve(_ settings: Settings) async throws {
        var settings = settings
        let logger = settings.server.logger
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
        let registry = FeedRegistry(replayLimit: settings.replay, server: server)
        let viewModels = ViewModelFeeds(registry: registry)
        try await viewModels.publishAll()
        let files: StaticFiles
        do { files = try StaticFiles(root: settings.publicDirectory) } catch { throw ConfigurationError(message: "\(error)") }
        let api = FeedAPI(registry: registry, viewModels: viewModels, files: files, options: settings.api, serverMetrics: { server.metrics })
        let port: UInt16
        do {
            port = try server.start { request in await api.handle(request) }
        } catch {
            throw ConfigurationError(message: "cannot listen on \(settings.server.host):\(settings.server.port): \(error)")
        }
        let scheme = settings.server.tls == nil ? "http" : "https"
        let shownHost = settings.server.host.contains(":") ? "[\(settings.server.host)]" : settings.server.host
        logger.log(.info, "diffstream listening on \(scheme)://\(shownHost):\(port)")
        if logger.level > .info {
            FileHandle.standardError.write(Data("diffstream listening on \(scheme)://\(shownHost):\(port)\n".utf8))
        }

        if settings.demo {
            Task.detached {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(2))
                    await viewModels.demoTick()
                }
            }
            Task.detached {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(3))
                    await viewModels.simulateWeather()
                }
            }
        }

        let signalNumber = await stop.wait()
        logger.info("signal \(signalNumber): shutting down")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            server.shutdown(timeout: 3) {
                logger.info("shut down")
                continuation.resume()
            }
        }
        Foundation.exit(0)
    }
}

/// Catches termination signals from its creation on and reports the first one.
final class StopSignal: @unchecked Sendable {
    // `@unchecked Sendable`: `received`, `waiter` and `sources` are guarded by `lock`.
    private let lock = NSLock()
    private var received: Int32?
    private var waiter: CheckedContinuation<Int32, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(signals: [Int32]) {
        for signalNumber in signals {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { [weak self] in self?.fire(signalNumber) }
            source.resume()
            sources.append(source)
        }
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
