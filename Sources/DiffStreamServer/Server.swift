import EpollRuntime
import FeedReplication
import FeedStorage
import Foundation
import Logging
import Presence
import ServiceLifecycle
import Synchronization

/// Hosts view models from a program of one's own: the durable store, the feeds, the HTTP API, the
/// event streams and (optionally) a page, on our own epoll server.
///
/// ```swift
/// var configuration = Server.Configuration()
/// configuration.dataDirectory = "data"
/// let server = try await Server(configuration: configuration)
/// try await server.host(Scoreboard(), as: "scores")
/// try await server.run()          // until SIGINT/SIGTERM, then a graceful shutdown
/// ```
///
/// This type was named like its module, `DiffStreamServer`, before; that name stays as a deprecated
/// alias for one release (docs/upgrading.md).
///
/// A server is a swift-service-lifecycle `Service`: in a `ServiceGroup` set
/// ``Configuration/catchesSignals`` to false and let the group's `gracefulShutdownSignals` stop it.
///
/// What creating a server changes for the whole process (the library never calls `exit`):
/// - SIGPIPE is ignored (a write to a closed socket is an error, not the end of the process).
/// - The open-file limit (`RLIMIT_NOFILE`) is raised to its hard limit, and
///   ``Configuration/maxConnections`` lowered to fit under it.
/// - swift-metrics is bootstrapped with a Prometheus registry, unless the program bootstrapped it first.
/// - With ``Configuration/catchesSignals`` (the default), handlers for SIGINT and SIGTERM are installed,
///   for good: a signal that arrives before ``run()`` makes it return at once, none is lost.
public final class Server: Service, Sendable {
    /// The configuration the server was made with (``Configuration/maxConnections`` as given).
    public let configuration: Configuration
    /// Every feed: the ones clients create and the hosted view models' ones.
    public let registry: FeedRegistry
    /// Keeps the registry's copies of a shared store's feeds up to date (does nothing without one).
    private let following: SharedFeedFollower
    /// The hosted view models; ``host(_:as:state:)`` adds one.
    public let hosted: HostedFeeds
    /// Where DiffStream's metrics go, and the registry `/metrics` serves.
    public let metrics: MetricsEndpoint

    private let http: HTTPServer
    private let store: LogFeedStore?
    /// Where families keep their members (with a data directory).
    private let members: MemberStore?
    /// The store several instances share, when ``Configuration/sharing`` names one.
    private let shared: OpenedSharing?
    private let logger: Logger
    private let stop = StopRequest()
    private let state: Mutex<LifeState>

    /// Whether the server has bound, the tasks cancelled at shutdown, and the shutdown once begun.
    private struct LifeState {
        var port: UInt16?
        /// ``cancelAtShutdown(_:)``'s tasks (a view model's sources).
        var sources: [Task<Void, any Error>]
        var shutdown: Task<Void, Never>?
        /// Pushes the counters to the program's own metrics backend (nil with DiffStream's registry).
        var metricsPush: Task<Void, Never>?
    }

    /// Opens, locks and loads the data directory (if any) or the shared store (``Configuration/sharing``),
    /// restores its feeds and gets the API ready; nothing is bound until ``start()`` or ``run()``.
    public init(configuration: Configuration) async throws(StartError) {
        self.configuration = configuration
        let logger = configuration.logger
        self.logger = logger
        // First, before anything records a metric: bootstraps swift-metrics with the registry /metrics serves.
        let metrics = MetricsEndpoint(registry: configuration.metricsRegistry)
        self.metrics = metrics
        signal(SIGPIPE, SIG_IGN)
        if configuration.catchesSignals {
            // Caught from here on, before anyone can know the port: none is ever lost.
            StopSignal.shared.onSignal { [stop] signalNumber in stop.request(.signal(signalNumber)) }
        }
        var server = HTTPServer.Configuration(
            host: configuration.host, port: configuration.port, maxConnections: configuration.maxConnections,
            maxConnectionsPerAddress: configuration.maxConnectionsPerAddress, streamBufferLimit: configuration.streamBufferLimit,
            compression: configuration.compression, heartbeat: configuration.heartbeat, loops: configuration.loops, logger: logger, requestLog: configuration.requestLog)
        server.maxConnections = FileLimit.fit(maxConnections: configuration.maxConnections, logger: logger)
        server.limits.headerTimeout = configuration.headerTimeout
        server.limits.idleTimeout = configuration.idleTimeout
        server.limits.bodyTimeout = configuration.bodyTimeout
        server.limits.writeTimeout = configuration.writeTimeout
        server.limits.maxBodyBytes = configuration.maxBodyBytes
        switch (configuration.tlsCertificatePath, configuration.tlsPrivateKeyPath) {
        case (let certificate?, let key?): server.tls = TLSConfiguration(certificatePath: certificate, privateKeyPath: key)
        case (nil, nil): break
        default: throw StartError(.tls, "the TLS certificate and key go together: give both or neither")
        }
        do {
            http = try HTTPServer(configuration: server)
        } catch {
            throw StartError(server.tls == nil ? .listen : .tls, "\(error)")
        }

        let loopback = BindAddress.isLoopback(configuration.host)
        var options = FeedAPI.Options(token: configuration.token, allowOrigin: configuration.allowOrigin, compression: configuration.compression)
        options.privateReads = configuration.privateReads
        options.publicFeeds = configuration.publicFeeds
        options.boundFamilies = configuration.boundFamilies
        options.openWrites = loopback || configuration.openWrites
        options.publicOrigin = configuration.publicOrigin
        options.tls = configuration.tlsCertificatePath != nil
        options.heartbeat = configuration.heartbeat
        options.maxStreamFeeds = configuration.maxStreamFeeds
        options.presence = FeedAPI.PresencePolicy(feeds: configuration.presence.map(FeedPattern.init), identities: configuration.presenceNames.map(FeedPattern.init))
        if configuration.jwtSecret != nil || configuration.jwtPublicKeyPEM != nil {
            do {
                options.verifier = try await JWTVerifier(hmacSecret: configuration.jwtSecret, publicKeyPEM: configuration.jwtPublicKeyPEM)
            } catch {
                throw StartError(.jwt, error.description)
            }
        }
        var pages: [any StaticContent] = [BrowserLibrary()]
        if let directory = configuration.publicDirectory {
            do { pages.append(try StaticFiles(root: directory)) } catch { throw StartError(.publicDirectory, "the public directory '\(directory)' cannot be served: \(error)") }
        } else if configuration.servesBuiltInPage {
            pages.append(BrowserLibrary.builtInPage)
            logger.info("serving the page built into the binary (no page directory given)")
        }
        let files = StaticContentChain(pages)

        let shared = try await Self.openSharing(configuration, logger: logger, stop: stop)
        self.shared = shared
        let opened = shared == nil ? try Self.openStore(configuration, logger: logger) : nil
        store = opened?.store
        let storage = StorageLimits(
            maxFeeds: configuration.maxFeeds, maxFeedBytes: configuration.maxFeedBytes,
            maxStoreBytes: configuration.maxStoreBytes ?? configuration.sharing?.defaultMaxStoreBytes ?? StorageLimits.defaultMaxStoreBytes(dataDirectory: configuration.dataDirectory))
        registry = if let shared {
            FeedRegistry(replayLimit: configuration.replay, transport: http, sharing: shared.store, storage: StorageAccount(limits: storage), logger: logger)
        } else {
            FeedRegistry(replayLimit: configuration.replay, transport: http, store: opened?.store, storage: StorageAccount(limits: storage), logger: logger)
        }
        following = SharedFeedFollower(registry: registry)
        await following.start()
        if let (store, contents) = opened {
            let restoring = MonotonicClock.now()
            let skipped = await registry.restore(contents.feeds)
            logger.info("\(contents.feeds.count - skipped.count) feeds restored in \(Int((MonotonicClock.now() - restoring) * 1000)) ms")
            guard skipped.isEmpty || configuration.setAsideDamaged else {
                store.close()
                let feeds = skipped.map { "'\($0.name)': \($0.reason)" }
                throw StartError(.damagedData(directory: store.directory, feeds: feeds),
                                 "the data in '\(store.directory)' cannot be trusted: \(feeds.joined(separator: "; ")); set setAsideDamaged to skip those feeds")
            }
            for entry in contents.setAside + skipped { logger.warning("set aside damaged data: \(entry.name): \(entry.reason)") }
        }
        // Families keep their members beside the log, in a store of their own that is not loaded at start
        // (docs/member-store.md): opened only when a durable directory is.
        var members: MemberStore?
        if let (store, _) = opened {
            // In a directory of its own, `members/`: the log's files (and their size on disk,
            // `diffstream_store_size_bytes`) are the data directory's regular files.
            let directory = store.directory + "/" + MemberStore.directoryName
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                members = try MemberStore(directory: directory)
            } catch {
                store.close()
                throw StartError(.store, "the family members' store in '\(directory)': \(error)")
            }
        }
        self.members = members
        if let members {
            // Kept members' bytes count against --max-store-bytes, live or not (their feeds are not
            // charged a second time), and their files on disk in diffstream_store_size_bytes.
            registry.storage.count(kept: members)
            registry.metrics.countFiles { members.sizeOnDisk() }
        }
        // glibc keeps the pages of freed memory: after a family let many members go, hand them back.
        hosted = HostedFeeds(registry: registry, members: members, releaseMemory: { HeapTrim.release() })
        let http = self.http
        // Presence feeds (issue 55) for the feeds the flags name and the hosted view models that ask.
        let presence = PresenceFeeds(transport: http, settings: PresenceTracker.Settings(interval: configuration.presenceInterval, grace: configuration.presenceGrace),
                                     sharing: shared?.presence, maxFeeds: configuration.maxPresenceFeeds)
        let api = FeedAPI(registry: registry, hosted: hosted, files: files, options: options, serverMetrics: { http.metrics }, metrics: metrics, presence: presence)
        self.api = api
        state = Mutex(LifeState(port: nil, sources: [], shutdown: nil, metricsPush: nil))
    }

    /// Pushes DiffStream's counters and gauges (requests, connections, streams, feeds, storage) to
    /// swift-metrics now. Needed only with a backend of the program's own, and there done every
    /// ``Configuration/metricsPushInterval`` seconds and at shutdown already.
    public func publishMetrics() {
        api.publishMetrics()
    }

    private let api: FeedAPI

    /// Opens ``Configuration/sharing``'s store (nil without one).
    private static func openSharing(_ configuration: Configuration, logger: Logger, stop: StopRequest) async throws(StartError) -> OpenedSharing? {
        guard let sharing = configuration.sharing else { return nil }
        let start = SharingStart(
            replay: configuration.replay, maxFeeds: configuration.maxFeeds, maxFeedBytes: configuration.maxFeedBytes,
            maxStoreBytes: configuration.maxStoreBytes ?? sharing.defaultMaxStoreBytes, dataDirectory: configuration.dataDirectory,
            logger: logger, stop: stop)
        return try await sharing.open(start)
    }

    /// Opens, locks and loads the data directory (nil without one); any problem names the path.
    private static func openStore(_ configuration: Configuration, logger: Logger) throws(StartError) -> (store: LogFeedStore, contents: StoreContents)? {
        guard let directory = configuration.dataDirectory else {
            logger.info("no data directory: feeds are kept in memory only")
            return nil
        }
        do {
            let started = MonotonicClock.now()
            let store = try LogFeedStore(directory: directory, setAsideDamaged: configuration.setAsideDamaged)
            let contents = try store.load()
            for note in contents.notes { logger.warning("store: \(note)") }
            logger.info("store \(store.directory): \(contents.feeds.count) feeds loaded in \(Int((MonotonicClock.now() - started) * 1000)) ms")
            return (store, contents)
        } catch {
            if case .locked(let path) = error { throw StartError(.store, error.description, cause: .dataDirectoryLocked(path: path)) }
            throw StartError(.store, error.description)
        }
    }

    /// Who is present on `feed` (issue 55, docs/protocol.md "Who is here"): what its presence feed
    /// shows now, then each change; nil when the feed has no presence (`--presence`, or its view
    /// model's ``HostedViewModel/presence``), or none now (``Configuration/maxPresenceFeeds`` are held
    /// and not its own). For a hosted view model's source, to show "3 watching" or
    /// to stop when nobody watches; ``PresenceSnapshot/changes(since:)`` tells the joins and leaves.
    /// Reading it makes no one present.
    public func presence(of feed: String) async -> AsyncStream<PresenceSnapshot>? {
        await api.presenceSnapshots(of: feed)
    }

    /// Hosts `model` as the feed `name`, from `state` (or what the store kept, or its initial state).
    @discardableResult
    public func host<Model: HostedViewModel>(_ model: Model, as name: String, state: Model.State? = nil) async throws(HostingError) -> ViewModelHost<Model> {
        try await hosted.host(model, as: name, state: state)
    }

    /// Hosts `model` as a family of feeds, `prefix.KEY` for every key (issue 38): each member made by
    /// `load` on its first use (after the request is authorized), dropped when idle, within `limits`;
    /// see ``HostedFeeds/host(family:_:limits:truth:shards:load:)``. Its members' sources stop at
    /// shutdown. `shards`: the lease shards of its keys under `--redis` (decision 0008).
    @discardableResult
    public func host<Model: HostedViewModel>(family prefix: String, _ model: Model, limits: FamilyLimits = FamilyLimits(), truth: FamilyTruth = .kept,
                                             shards: FamilyShards = FamilyShards(),
                                             load: @escaping @Sendable (FamilyMember<Model>) async throws -> Model.State) async throws(HostingError) -> ViewModelFamily<Model> {
        try await hosted.host(family: prefix, model, limits: limits, truth: truth, shards: shards, load: load)
    }

    /// Cancels `task` when the server shuts down, first, before the store closes: give it the tasks
    /// ``ViewModelHost/follow(_:update:)`` returns, so a view model's sources stop writing before the
    /// store they write to is gone. A task given after the shutdown began is cancelled at once.
    public func cancelAtShutdown(_ task: Task<Void, any Error>) {
        let late = state.withLock { state -> Bool in
            guard state.shutdown == nil else { return true }
            state.sources.append(task)
            return false
        }
        if late { task.cancel() }
    }

    /// The port the server listens on, once started (the one picked for port 0); 0 before.
    public var port: UInt16 { state.withLock { $0.port ?? 0 } }

    /// The path of the browser library built into this binary, `/_diffstream/<version>/`: a page imports
    /// `<libraryPath>diffstream.js`; `/_diffstream/current/diffstream.js` redirects there.
    public static var libraryPath: String { BrowserLibrary.path }

    /// Where the server listens, e.g. `http://127.0.0.1:8080` (the port is 0 before ``start()``).
    public var url: String {
        let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(scheme)://\(host):\(port)"
    }

    /// Binds and starts serving; returns the port (the one picked for port 0). Once started, returns
    /// the port again. ``run()`` calls it if it has not been called.
    @discardableResult
    public func start() async throws(StartError) -> UInt16 {
        let api = self.api
        let port = try state.withLock { state throws(StartError) -> UInt16? in
            if let port = state.port { return port }
            guard state.shutdown == nil else { throw StartError(.listen, "the server has shut down") }
            do {
                let port = try http.start { request in await api.handle(request) }
                state.port = port
                if metrics.feedsProgramBackend {
                    // 0.1 s to an hour: a finite sleep whatever the configuration says.
                    let interval = configuration.metricsPushInterval.isFinite ? min(3600, max(0.1, configuration.metricsPushInterval)) : 3600
                    state.metricsPush = Task {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: .seconds(interval))
                            api.publishMetrics()
                        }
                    }
                }
                return nil
            } catch let error as SystemError where error.errno == EADDRINUSE {
                throw StartError(.listen, "port \(configuration.port) on \(configuration.host) is in use by another program (\(error))",
                                 cause: .addressInUse(host: configuration.host, port: configuration.port))
            } catch {
                throw StartError(.listen, "cannot listen on \(configuration.host):\(configuration.port): \(error)")
            }
        }
        if let port { return port }  // started before
        logger.info("diffstream listening on \(url)")
        if !BindAddress.isLoopback(configuration.host) && !configuration.openWrites && configuration.token == nil
            && configuration.jwtSecret == nil && configuration.jwtPublicKeyPEM == nil {
            logger.warning("bound to the public address \(configuration.host) without a write credential: PUT, DELETE and PATCH of feeds are refused (403). Start with --token or --jwt-secret-file to allow writes with a credential, or --open-writes to allow them to anyone.")
        }
        return self.port
    }

    /// Starts (unless started) and serves until SIGINT or SIGTERM (with ``Configuration/catchesSignals``),
    /// the graceful shutdown of its `ServiceGroup`, the cancellation of its task or a ``shutdown()``;
    /// then shuts down gracefully: event streams end, responses in flight finish, the store is closed.
    public func run() async throws {
        try await start()
        let stop = self.stop
        let reason = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await stop.wait()
            } onCancel: {
                stop.request(.cancelled)
            }
        } onGracefulShutdown: {
            stop.request(.gracefulShutdown)
        }
        switch reason {
        case .signal(let signalNumber): logger.info("signal \(signalNumber): shutting down")
        case .gracefulShutdown: logger.info("graceful shutdown: shutting down")
        case .cancelled: logger.info("cancelled: shutting down")
        case .shutdown: break
        }
        await shutdown()
    }

    /// Shuts down gracefully (once; later calls wait for the first): stops accepting, ends event
    /// streams and live log reads, lets responses in flight finish (3 s at most), then closes the store and releases its
    /// lock. A ``run()`` in progress returns.
    public func shutdown() async {
        stop.request(.shutdown)
        let task = state.withLock { state in
            if let task = state.shutdown { return task }
            let started = state.port != nil
            let sources = state.sources
            let push = state.metricsPush
            let task = Task { [http, store, members, shared, following, logger, api, hosted] in
                for source in sources { source.cancel() }
                await hosted.stopFamilies()
                push?.cancel()
                api.endLongPolls()  // live log reads answer now: they would hold their connections up to 20 s
                if started {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        http.shutdown(timeout: 3) {
                            logger.info("shut down")
                            continuation.resume()
                        }
                    }
                }
                members?.close()
                store?.close()  // writes in flight are finished; the lock is released
                await following.stop()
                shared?.close()
                if push != nil { api.publishMetrics() }  // the last counts, for the program's backend
            }
            state.shutdown = task
            return task
        }
        await task.value
    }
}

/// Why ``Server/run()`` stops.
enum StopReason: Sendable {
    case signal(Int32)
    case gracefulShutdown
    case cancelled
    case shutdown
}

/// The first request to stop, and whoever waits for it.
final class StopRequest: Sendable {
    private let state = Mutex<(reason: StopReason?, waiters: [CheckedContinuation<StopReason, Never>])>((nil, []))

    /// Records `reason` unless a request came first, and wakes the waiters.
    func request(_ reason: StopReason) {
        let waiters = state.withLock { state -> [CheckedContinuation<StopReason, Never>] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    /// Whether a stop was requested by the end of `duration` (checked after it: a stop waits at most that long).
    func wait(upTo duration: Duration) async -> Bool {
        try? await Task.sleep(for: duration)
        return state.withLock { $0.reason != nil }
    }

    /// The first request's reason, at once if it has come.
    func wait() async -> StopReason {
        await withCheckedContinuation { continuation in
            let reason = state.withLock { state -> StopReason? in
                if state.reason == nil { state.waiters.append(continuation) }
                return state.reason
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }
}

/// The server's former name, when the type was named like its module.
@available(*, deprecated, renamed: "Server", message: "DiffStreamServer (the type) is now Server; the module keeps its name (docs/upgrading.md)")
public typealias DiffStreamServer = Server
