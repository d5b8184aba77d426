import Foundation
import HTTPCore
import Logging
import Prometheus

extension Server {
    /// Everything that can be set about a server: one field per flag of the `diffstream` command
    /// (named in each field's comment), with a library's defaults.
    ///
    /// `Configuration()` listens on 127.0.0.1:8080, serves no page and keeps feeds in memory. The
    /// `diffstream` command has its own defaults (`./Public`, `./data`), and hosts the examples itself. `--log-level` and `--log-format` have no field: they are the ``logger``'s business.
    public struct Configuration: Sendable {
        // Listening.
        /// The address to bind, IPv4 or IPv6 (`--host`).
        public var host = "127.0.0.1"
        /// The port to listen on; 0 picks a free one, which ``Server/port`` then tells (`--port`).
        public var port: UInt16 = 8080
        /// Event loops, the threads serving sockets; at least 1 (`--loops`).
        public var loops = ProcessInfo.processInfo.activeProcessorCount
        /// The most simultaneous connections (`--max-connections`); lowered to fit the open-file limit.
        public var maxConnections = 10_000
        /// The most simultaneous connections from one IP address; 0 turns the cap off (`--max-connections-per-ip`).
        public var maxConnectionsPerAddress = 256
        /// A PEM certificate chain: with ``tlsPrivateKeyPath``, HTTPS is served (`--tls-cert`).
        public var tlsCertificatePath: String?
        /// The PEM private key for ``tlsCertificatePath`` (`--tls-key`).
        public var tlsPrivateKeyPath: String?
        /// gzip responses and event streams for clients that accept it (`--compression`).
        public var compression = true
        /// Seconds between heartbeat comments on idle event streams (`--heartbeat`).
        public var heartbeat: Double = 15
        /// The most feeds one multi-feed stream (`GET /events?feed=…`) may list; more get 400 (`--max-stream-feeds`).
        public var maxStreamFeeds = 100
        /// Bytes queued per event stream before it counts as fallen behind (`--stream-buffer`).
        public var streamBufferLimit = 1 << 20
        /// Seconds for a request's header section to arrive (`--header-timeout`).
        public var headerTimeout: Double = 10
        /// Seconds an idle keep-alive connection is kept (`--idle-timeout`).
        public var idleTimeout: Double = 60
        /// Seconds a request body may take to arrive, then 408 (`--body-timeout`).
        public var bodyTimeout: Double = 30
        /// Seconds a response or event stream may make no write progress before it is dropped (`--write-timeout`).
        public var writeTimeout: Double = 30
        /// The largest request body in bytes (`--max-body`).
        public var maxBodyBytes = 8 << 20
        /// The value of `Access-Control-Allow-Origin`; nil sends no CORS headers (`--allow-origin`).
        public var allowOrigin: String?
        /// The origin users reach the server at, `scheme://host[:port]`, when that is not the request's
        /// `Host` with the scheme the server serves (behind a TLS proxy): writes that carry only the
        /// cookie are taken from it too (`--public-origin`).
        public var publicOrigin: String?

        // The page.
        /// The directory of the page's static files; nil serves the API and the streams only (`--public`).
        /// Whatever it is, every server serves the browser library built into the binary at
        /// `/_diffstream/<version>/` (``Server/libraryPath``).
        public var publicDirectory: String?
        /// With no ``publicDirectory``, serve the page built into the binary (Public/ as it was built):
        /// `diffstream` does when `--public` is not given and there is no `./Public`.
        public var servesBuiltInPage = false

        // Feeds.
        /// Batches kept per feed for resuming clients (`--replay`).
        public var replay = 1024
        /// The most feeds clients may create; hosted view models do not count (`--max-feeds`).
        public var maxFeeds = 10_000
        /// The largest snapshot one feed may hold, in encoded bytes (`--max-feed-bytes`).
        public var maxFeedBytes = 8 << 20
        /// Encoded bytes of all snapshots and replay windows together; nil: a quarter of the memory, at
        /// least 64 MiB, and no more than the data directory's disk has free; with ``sharing``, its default
        /// (1 GiB for Redis), counted over every instance (`--max-store-bytes`).
        public var maxStoreBytes: Int?
        /// The durable feed store's directory, opened and locked at start; nil keeps feeds in memory (`--data`).
        public var dataDirectory: String?
        /// Where feeds are kept when several instances serve them together, in place of ``dataDirectory``;
        /// nil: not shared. `RedisSharing` (product `DiffStreamRedis`) keeps them in Redis (`--redis`).
        public var sharing: (any FeedSharing)?
        /// Start even if the data is damaged: set damaged feeds aside and keep the rest (`--set-aside-damaged`).
        public var setAsideDamaged = false

        // Rights.
        /// The bearer token every write must carry (`--token`).
        public var token: String?
        /// The HS256 secret (32 bytes or more) that signed tokens are checked with (`--jwt-secret-file`).
        public var jwtSecret: [UInt8]?
        /// A PEM public key (RSA for RS256, P-256 for ES256) that signed tokens are checked with (`--jwt-public-key`).
        public var jwtPublicKeyPEM: String?
        /// Reads need a token whose subscribe patterns match the feed, except for ``publicFeeds`` (`--private`).
        public var privateReads = false
        /// Feeds anyone may read under ``privateReads`` (`--public-feeds`).
        public var publicFeeds: Set<String> = []
        /// Families whose members are their users' only (``AccessPolicy/boundFamilies``): a member
        /// `PREFIX.KEY` is read, subscribed to and acted on only with the admin token or a signed token
        /// whose `sub` maps to `KEY` through the ``SubjectKey`` given (`--bound-families`: ``SubjectKey/escaped``).
        public var boundFamilies: [String: SubjectKey] = [:]
        /// Feeds with presence (issue 55, docs/protocol.md "Who is here"): each gets a read-only feed
        /// of who is present, `_presence.F` (`--presence`, comma-separated patterns).
        public var presence: [String] = []
        /// Feeds whose presence shows who is present: a token's `sub` and `name` (`--presence-names`);
        /// they have presence too.
        public var presenceNames: [String] = []
        /// Seconds between two batches of one presence feed at least (`--presence-interval`).
        public var presenceInterval: Double = 1
        /// Seconds a user stays present after their last stream closed (`--presence-grace`).
        public var presenceGrace: Double = 5
        /// The most presence feeds this instance holds at once (`--max-presence-feeds`): past it, a feed
        /// whose presence feed is not held has none until one is dropped (its streams make no one
        /// present; `_presence.F` answers `503`, or `event: notfound` in a multi-feed stream).
        public var maxPresenceFeeds = 10_000
        /// Allow writes without a credential even on a public address (`--open-writes`). On a loopback
        /// address writes are always open to this machine.
        public var openWrites = false

        // The process.
        /// Where every log line goes (requests, stream connects and disconnects, the store, the start).
        public var logger = Logger(label: "diffstream")
        /// Where the request lines go (one per request answered, at `info`); nil: through ``logger``,
        /// with every field as metadata. The `diffstream` command gives its `LineLogHandler` (LogLines),
        /// which writes them field by field.
        public var requestLog: (any RequestLog)?
        /// The Prometheus registry `/metrics` serves. Nil: unless the program bootstrapped swift-metrics
        /// itself, the server bootstraps it with a registry of its own; if the program did, `/metrics`
        /// answers 404 (see ``FeedServer/MetricsEndpoint``).
        public var metricsRegistry: PrometheusCollectorRegistry?
        /// Seconds between pushes of DiffStream's counters and gauges to a swift-metrics backend the
        /// program bootstrapped itself (histograms are recorded as things happen); one more push at
        /// shutdown (from 0.1 s to an hour; pushing starts with ``Server/start()``). With
        /// DiffStream's own registry they are pushed when `/metrics` renders instead.
        public var metricsPushInterval: Double = 10
        /// ``Server/run()`` stops at SIGINT or SIGTERM (caught from the server's creation on).
        /// Set it to false in a `ServiceGroup`, whose `gracefulShutdownSignals` then own the signals.
        public var catchesSignals = true

        /// A library's defaults: loopback, port 8080, no page, feeds in memory.
        public init() {}
    }
}
