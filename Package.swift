// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "DiffStream",
    // Platforms. The declaration below is the client products': DiffStream, DiffStreamJSON and
    // DiffStreamClient build for these Apple systems (iOS 15: `reconfigureItems`) and for Linux.
    // Every other product is Linux-only (the epoll runtime; `Synchronization.Mutex`, which Apple has
    // from macOS 15 only): HTTPCore, EpollRuntime, FeedServer, FeedStorage, LogLines, DiffStreamExamples,
    // DiffStreamTesting, DiffStreamServer, DiffStreamRedis, TLSStreamClient, diffstream and diffstream-watch. SwiftPM declares platforms
    // per package, not per product; checks/structure/test_platforms.py checks both halves of this.
    platforms: [.macOS(.v14), .iOS(.v15), .tvOS(.v15), .watchOS(.v8), .macCatalyst(.v15)],
    products: [
        .library(name: "DiffStream", targets: ["DiffStream"]),
        .library(name: "DiffStreamJSON", targets: ["DiffStreamJSON"]),
        .library(name: "HTTPCore", targets: ["HTTPCore"]),
        .library(name: "EpollRuntime", targets: ["EpollRuntime"]),
        .library(name: "FeedServer", targets: ["FeedServer"]),
        .library(name: "FeedStorage", targets: ["FeedStorage"]),
        .library(name: "LogLines", targets: ["LogLines"]),
        .library(name: "DiffStreamExamples", targets: ["DiffStreamExamples"]),
        .library(name: "DiffStreamTesting", targets: ["DiffStreamTesting"]),
        // Hosts view models from a program of one's own: `import DiffStreamServer` (see README).
        .library(name: "DiffStreamServer", targets: ["DiffStreamServer"]),
        // Keeps a server's feeds in Redis, for several instances (`RedisSharing`; docs/deploy-redis.md).
        .library(name: "DiffStreamRedis", targets: ["DiffStreamRedis"]),
        // Follows feeds from Swift programs (iOS apps, tools) and translates batches into diffable data source
        // calls: `import DiffStreamClient` (docs/client-swift.md).
        .library(name: "DiffStreamClient", targets: ["DiffStreamClient"]),
        // A stream transport for DiffStreamClient over OpenSSL: a CA file and `insecure` on Linux too.
        .library(name: "TLSStreamClient", targets: ["TLSStreamClient"]),
        .executable(name: "diffstream", targets: ["diffstream"]),
        // `diffstream watch`: the Swift client in a program of its own, which `diffstream watch` runs.
        .executable(name: "diffstream-watch", targets: ["diffstream-watch"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),  // 1.6: @ParentCommand
        // JWT verification (HS256, RS256, ES256) for per-feed rights; see docs/architecture.md.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // SHA-256 of the request an Idempotency-Key came with (already in the graph through jwt-kit).
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"6.0.0"),
        // Logging through swift-log: the library logs to whatever backend the program bootstraps.
        // 1.16.2: `LogHandler.log(event:)`; implementing the older, now deprecated entry point warns.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Metrics through swift-metrics; `/metrics` renders swift-prometheus's registry (2.4.1: `# HELP` texts).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `DiffStreamServer` is a `Service`, to run in a `ServiceGroup` beside a program's other services.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        // Snapshots, the result-builder DSL, the diff and `apply`. No HTTP, no Foundation.
        .target(name: "DiffStream", swiftSettings: strict),
        // JSON values, the wire snapshot/operation types and their byte-level codec.
        .target(name: "DiffStreamJSON", dependencies: ["DiffStream", "JSONEscaping"], swiftSettings: strict),
        // `MonotonicClock`, the one monotonic clock of the server, the store, Redis and the client, and `WallClock`,
        // seconds since 1970 (tokens, file stamps). Dispatch and the C library only.
        .target(name: "Timekeeping", swiftSettings: strict),
        // The one JSON string escaper (RFC 8259 §7), for the wire, HTTP error bodies and log lines. No dependencies.
        .target(name: "JSONEscaping", swiftSettings: strict),
        // System libraries from Debian (libssl-dev, zlib1g-dev).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // SQLite from Debian (libsqlite3-dev): `MemberStore` (family members, read and written) and the old store's migrator.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        // libhiredis from Debian (libhiredis-dev), the Redis client behind the module Redis (issue 26). Found
        // without pkg-config: hiredis.pc's -D_FILE_OFFSET_BITS=64 is a flag SwiftPM refuses, with a warning.
        .systemLibrary(name: "CHiredis"),
        // Talks RESP to a Redis server through hiredis: connections with a timeout on every call, a thread
        // per connection, replies as a Swift enum, pub/sub on a dedicated connection, `redis://` URLs.
        .target(name: "Redis", dependencies: ["CHiredis", "CThreads", "Timekeeping"], swiftSettings: strict),
        // Feeds in Redis (issue 26, in progress): the key schema, the scripts, lost answers settled, and the
        // shared store seam (`RedisStore` as `SharedFeedStore`).
        .target(name: "RedisFeedStore", dependencies: ["Redis", "FeedStorage", "Timekeeping"], swiftSettings: strict),
        // Durable feed storage behind a small seam (`FeedStore`): opaque bytes per feed; the log store, and a
        // read-only migrator for the SQLite databases of earlier versions.
        .target(name: "FeedStorage", dependencies: ["CSQLite", "CZlib", "CThreads", "Timekeeping", .product(name: "CoreMetrics", package: "swift-metrics")], swiftSettings: strict),
        // epoll and eventfd, which the Glibc module does not export.
        .target(name: "CSystemShims"),
        // Naming the calling thread (prctl): for every thread of ours, in the modules that start one.
        .target(name: "CThreads"),
        // HTTP/1.1 and SSE as pure logic: requests, responses, the parser, the connection state machine,
        // the response head encoder, the SSE writer, gzip, and the seam to the feeds (`EventSink`,
        // `EventBroadcaster`). No sockets, no Glibc, no epoll.
        // The event types the feeds and the HTTP server share: a payload encoded once, a sink, a broadcaster.
        .target(name: "ServerSentEvents", swiftSettings: strict),
        .target(name: "HTTPCore", dependencies: ["ServerSentEvents", "CZlib", "JSONEscaping", "Timekeeping", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // The epoll runtime: sockets, event loops, connections, event streams, static files, TLS. Knows nothing of feeds.
        // The OpenSSL context both TLS sides start from (TLS 1.2 or newer) and the error queue read as text.
        .target(name: "OpenSSLSupport", dependencies: ["COpenSSL"], swiftSettings: strict),
        .target(name: "EpollRuntime", dependencies: ["HTTPCore", "COpenSSL", "OpenSSLSupport", "CZlib", "CSystemShims", "CThreads", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // The executable's swift-log handler: one line per message, as text or as JSON. EpollRuntime writes its
        // request lines through it directly when it is the backend (no metadata dictionary per request).
        .target(name: "LogLines", dependencies: ["HTTPCore", "JSONEscaping", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // The feed core: a feed's snapshot, version, history, replay window and subscribers, the diff of
        // each write, the registry, storage accounting, events and event ids. Joins the diff engine and
        // HTTP through HTTPCore's transport seam only; never the epoll runtime.
        .target(name: "FeedCore", dependencies: ["DiffStream", "DiffStreamJSON", "ServerSentEvents", "FeedStorage", "Timekeeping", .product(name: "Crypto", package: "swift-crypto"),
                                                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics")], swiftSettings: strict),
        // Keeping copies of a shared store's feeds (docs/decisions/0005-feed-log-and-replication.md): the
        // leases of hosted sources. Knows the store only through FeedStorage's seams, never Redis.
        .target(name: "FeedReplication", dependencies: ["FeedCore", "FeedStorage", "ServerSentEvents", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // Who is present on a feed (issue 55): the pure tracker, and the derived feeds it writes; fed by the HTTP layer.
        .target(name: "Presence", dependencies: ["DiffStream", "DiffStreamJSON", "FeedCore", "ServerSentEvents", "Timekeeping", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // Hosting view models: `HostedViewModel`, `ViewModelHost`, `HostedFeeds`, actions, `ViewModelError`.
        .target(name: "ViewModelHosting", dependencies: ["FeedCore", "FeedReplication", "DiffStream", "DiffStreamJSON", "FeedStorage", "Timekeeping", .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // The HTTP API: the route table, `FeedAPI`, API errors (the one place statuses are chosen),
        // authorization (tokens, JWT), the multi-feed stream policy, `/metrics`.
        .target(name: "HTTPAPI", dependencies: ["FeedCore", "ViewModelHosting", "Presence", "DiffStreamJSON", "HTTPCore", "FeedStorage", .product(name: "JWTKit", package: "jwt-kit"),
                                               .product(name: "Metrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus")], swiftSettings: strict),
        // The three above with one import (`@_exported`), as before they were split (issue 36). Deprecated
        // (issue 53, docs/upgrading.md): kept for one release; no product of ours depends on it.
        .target(name: "FeedServer", dependencies: ["FeedCore", "ViewModelHosting", "HTTPAPI"], swiftSettings: strict),
        // The example view models (home, week, blackjack, forecast, todo), written with hosting's public API only.
        .target(name: "DiffStreamExamples", dependencies: ["DiffStream", "DiffStreamJSON", "FeedCore", "ViewModelHosting"], swiftSettings: strict),
        // `ViewModelHarness`: drives a hosted view model in a unit test, with no server and no store.
        .target(name: "DiffStreamTesting", dependencies: ["DiffStream", "DiffStreamJSON", "FeedCore", "ViewModelHosting", "HTTPAPI", "FeedStorage"], swiftSettings: strict),
        // The library a program hosts its view models with: the store, the registry, the API and the
        // server wired together, with a graceful shutdown (a swift-service-lifecycle `Service`).
        .target(name: "DiffStreamServer", dependencies: ["DiffStream", "DiffStreamJSON", "FeedCore", "ViewModelHosting", "HTTPAPI", "Presence", "FeedReplication", "FeedStorage", "EpollRuntime", "CThreads",
                                                        .product(name: "Logging", package: "swift-log"), .product(name: "Prometheus", package: "swift-prometheus"),
                                                        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")], swiftSettings: strict),
        // `RedisSharing`: the server's feeds kept in Redis, shared by several instances (`--redis`). A product
        // of its own, so a program that does not share its feeds links neither hiredis nor the Redis code.
        .target(name: "DiffStreamRedis", dependencies: ["DiffStreamServer", "FeedStorage", "Presence", "Redis", "RedisFeedStore", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        // The Swift client: follows feeds (typed decoding, resume, gaps, heartbeats, offline cache), runs actions
        // over URLSession, and translates batches into `NSDiffableDataSourceSnapshot` calls (pure, any platform).
        // Depends on the snapshot types and the pure wire codec only, never on the server.
        .target(name: "DiffStreamClient", dependencies: ["DiffStream", "DiffStreamJSON", "Timekeeping"], swiftSettings: strict),
        // `TLSStreamTransport`: DiffStreamClient's streams as HTTP/1.1 over a blocking socket, plain or TLS
        // through OpenSSL (a CA file, no verification), for Linux, where FoundationNetworking offers neither.
        .target(name: "TLSStreamClient", dependencies: ["DiffStreamClient", "COpenSSL", "OpenSSLSupport"], swiftSettings: strict),
        // Parses flags into a `DiffStreamServer.Configuration` and runs the server. `diffstream watch` runs
        // `diffstream-watch`, found beside it: the server process does not load the client's HTTP stack
        // (FoundationNetworking and libcurl). Not a dependency: SwiftPM would link the dependency's
        // libraries into this one too. `swift build` builds both; scripts and the Dockerfile name both.
        .executableTarget(
            name: "diffstream",
            dependencies: ["DiffStreamServer", "DiffStreamRedis", "DiffStreamExamples", "FeedStorage", "LogLines", "Timekeeping", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // `diffstream watch URL FEED…`: follows feeds with DiffStreamClient (and TLSStreamClient for https).
        .executableTarget(
            name: "diffstream-watch",
            dependencies: ["DiffStream", "DiffStreamJSON", "DiffStreamClient", "TLSStreamClient", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        // Helpers shared by the test targets (a seeded generator for property-based tests).
        .target(name: "TestSupport", dependencies: ["DiffStreamJSON", "HTTPCore"], path: "Tests/TestSupport", swiftSettings: strict),
        // View models the hosting suites share: two releases of one program's kept state (KeptStateVersionTests, KeptStateVersionRedisTests).
        .target(name: "HostingTestSupport", dependencies: ["DiffStream", "DiffStreamJSON", "ViewModelHosting"], path: "Tests/HostingTestSupport", swiftSettings: strict),
        .testTarget(name: "DiffStreamTests", dependencies: ["DiffStream", "DiffStreamJSON", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "DiffStreamJSONTests", dependencies: ["DiffStreamJSON", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "EpollRuntimeTests", dependencies: ["EpollRuntime", "TestSupport", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "LogLinesTests", dependencies: ["LogLines", "JSONEscaping", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "FeedCoreTests", dependencies: ["FeedCore", "FeedStorage", "DiffStream", "DiffStreamJSON", "ServerSentEvents", "EpollRuntime", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "PresenceTests", dependencies: ["Presence", "FeedCore", "DiffStream", "DiffStreamJSON", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "FeedReplicationTests", dependencies: ["FeedReplication", "FeedCore", "FeedStorage"], swiftSettings: strict),
        .testTarget(name: "ViewModelHostingTests", dependencies: ["ViewModelHosting", "FeedCore", "TestSupport"], swiftSettings: strict),
        // The HTTP API, and what is tested through it on a real server (`TestServer`, port 0) or through
        // `FeedAPI`: streams, hosted view models and families, kept state's refusals, request lines.
        .testTarget(name: "HTTPAPITests", dependencies: ["HTTPAPI", "Presence", "FeedCore", "ViewModelHosting", "FeedStorage", "EpollRuntime", "LogLines", "TestSupport", "HostingTestSupport", .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Logging", package: "swift-log"),
                                                         .product(name: "Metrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus")], swiftSettings: strict),
        .testTarget(name: "RedisTests", dependencies: ["Redis", "RedisFeedStore", "FeedStorage", "FeedServer", "FeedReplication", "DiffStream", "DiffStreamJSON", "TestSupport", "HostingTestSupport", "Timekeeping",
                                                         .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
        .testTarget(name: "FeedStorageTests", dependencies: ["FeedStorage", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "DiffStreamTestingTests", dependencies: ["DiffStreamTesting", "DiffStream", "DiffStreamJSON", "FeedServer"], swiftSettings: strict),
        .testTarget(name: "DiffStreamExamplesTests", dependencies: ["DiffStreamExamples", "FeedServer", "DiffStreamTesting"], swiftSettings: strict),
        .testTarget(name: "DiffStreamClientTests", dependencies: ["DiffStreamClient", "DiffStream", "DiffStreamJSON", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "TLSStreamClientTests", dependencies: ["TLSStreamClient", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "DiffStreamServerTests", dependencies: ["DiffStreamServer", "TestSupport", .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
                                                                 .product(name: "Crypto", package: "swift-crypto"),
                                                                 .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")], swiftSettings: strict),
    ]
)
