import ArgumentParser
import Dispatch
import Foundation
import Logging

/// `diffstream`: parses flags (each also from an environment variable) and wires the pieces together.
@main
struct DiffStreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diffstream",
        abstract: "Streams list diffs to browsers over Server-Sent Events.",
        discussion: "Every option can also be set with an environment variable: DIFFSTREAM_ and the option's name in capitals with underscores (e.g. DIFFSTREAM_PORT, DIFFSTREAM_MAX_CONNECTIONS). A flag wins over the environment.",
        subcommands: [TokenCommand.self, BackupCommand.self, RestoreCommand.self, WatchLauncher.self])

    @Option(help: "Address to bind (IPv4 or IPv6). [env: DIFFSTREAM_HOST] (default: 127.0.0.1)") var host: String?
    @Option(help: "Port to listen on; 0 picks a free one. [env: DIFFSTREAM_PORT] (default: 8080)") var port: String?
    @Option(name: .customLong("public"), help: "Directory of the page's static files. [env: DIFFSTREAM_PUBLIC] (default: ./Public if there is one, else the page built into the binary)") var publicDirectory: String?
    @Option(help: "Bearer token every write must carry. [env: DIFFSTREAM_TOKEN]") var token: String?
    @Option(help: "Seconds between heartbeat comments on idle event streams. [env: DIFFSTREAM_HEARTBEAT] (default: 15)") var heartbeat: String?
    @Option(help: "Batches kept per feed for resuming clients. [env: DIFFSTREAM_REPLAY] (default: 1024)") var replay: String?
    @Option(help: "Most simultaneous connections. [env: DIFFSTREAM_MAX_CONNECTIONS] (default: 10000)") var maxConnections: String?
    @Option(name: .customLong("max-connections-per-ip"), help: "Most simultaneous connections from one IP address; 0 turns the cap off. [env: DIFFSTREAM_MAX_CONNECTIONS_PER_IP] (default: 256)") var maxConnectionsPerIp: String?
    @Option(help: "Event loops (threads serving sockets). [env: DIFFSTREAM_LOOPS] (default: the number of cores)") var loops: String?
    @Option(help: "debug, info, warning, error or off. [env: DIFFSTREAM_LOG_LEVEL] (default: info)") var logLevel: String?
    @Option(help: "text (one readable line per message) or json (one JSON object per line). [env: DIFFSTREAM_LOG_FORMAT] (default: text)") var logFormat: String?
    @Option(help: "Value of Access-Control-Allow-Origin (enables CORS). [env: DIFFSTREAM_ALLOW_ORIGIN]") var allowOrigin: String?
    @Option(help: "The origin users reach the server at behind a TLS proxy (https://host[:port]); writes with only the cookie are taken from it as from the server's own. [env: DIFFSTREAM_PUBLIC_ORIGIN]") var publicOrigin: String?
    @Option(help: "PEM certificate chain; serves HTTPS with --tls-key. [env: DIFFSTREAM_TLS_CERT]") var tlsCert: String?
    @Option(help: "PEM private key for --tls-cert. [env: DIFFSTREAM_TLS_KEY]") var tlsKey: String?
    @Option(help: "Bytes queued per event stream before it counts as fallen behind. [env: DIFFSTREAM_STREAM_BUFFER] (default: 1048576)") var streamBuffer: String?
    @Option(help: "gzip responses and event streams: on or off. [env: DIFFSTREAM_COMPRESSION] (default: on)") var compression: String?
    @Option(help: "Seconds for a request's header section to arrive (slowloris guard). [env: DIFFSTREAM_HEADER_TIMEOUT] (default: 10)") var headerTimeout: String?
    @Option(help: "Seconds an idle keep-alive connection is kept. [env: DIFFSTREAM_IDLE_TIMEOUT] (default: 60)") var idleTimeout: String?
    @Option(help: "Seconds a request body may take to arrive (then 408). [env: DIFFSTREAM_BODY_TIMEOUT] (default: 30)") var bodyTimeout: String?
    @Option(help: "Seconds a response or event stream may make no write progress before it is dropped. [env: DIFFSTREAM_WRITE_TIMEOUT] (default: 30)") var writeTimeout: String?
    @Option(help: "Largest request body in bytes. [env: DIFFSTREAM_MAX_BODY] (default: 8388608)") var maxBody: String?
    @Option(help: "Most feeds one multi-feed stream (GET /events?feed=…) may list; more get 400. [env: DIFFSTREAM_MAX_STREAM_FEEDS] (default: 100)") var maxStreamFeeds: String?
    @Option(help: "Most feeds clients may create (hosted view-model feeds do not count); more get 507. [env: DIFFSTREAM_MAX_FEEDS] (default: 10000)") var maxFeeds: String?
    @Option(help: "Largest snapshot one feed may hold, in encoded bytes; larger get 507. [env: DIFFSTREAM_MAX_FEED_BYTES] (default: 8388608)") var maxFeedBytes: String?
    @Option(help: "Encoded bytes of all snapshots and replay windows together; past it writes get 507. [env: DIFFSTREAM_MAX_STORE_BYTES] (default: a quarter of the memory, at least 64 MiB)") var maxStoreBytes: String?
    @Option(help: "File holding the HS256 secret (32 bytes or more) that signed tokens (JWT) are checked with. [env: DIFFSTREAM_JWT_SECRET_FILE, or DIFFSTREAM_JWT_SECRET holding the secret itself]") var jwtSecretFile: String?
    @Option(help: "PEM public key (RSA for RS256, P-256 for ES256) that signed tokens are checked with. [env: DIFFSTREAM_JWT_PUBLIC_KEY]") var jwtPublicKey: String?
    @Flag(name: .customLong("private"), help: "Reads need a token whose subscribe patterns match the feed, except for --public-feeds. [env: DIFFSTREAM_PRIVATE=1]") var privateFlag = false
    @Option(help: "Comma-separated feeds anyone may read under --private. [env: DIFFSTREAM_PUBLIC_FEEDS]") var publicFeeds: String?
    @Flag(help: "Allow writes without a credential even on a public address. [env: DIFFSTREAM_OPEN_WRITES=1]") var openWrites = false
    @Option(help: "Comma-separated families whose members are their users' only: PREFIX.KEY needs a token whose sub maps to KEY (docs/protocol.md). [env: DIFFSTREAM_BOUND_FAMILIES]") var boundFamilies: String?
    @Option(help: "Comma-separated feed patterns (news, board*) whose feeds get a presence feed, _presence.FEED: who is watching, anonymously (docs/protocol.md). [env: DIFFSTREAM_PRESENCE]") var presence: String?
    @Option(help: "Comma-separated feed patterns whose presence feed shows who is watching: a token's sub and name. [env: DIFFSTREAM_PRESENCE_NAMES]") var presenceNames: String?
    @Option(help: "Seconds between two batches of one presence feed at least. [env: DIFFSTREAM_PRESENCE_INTERVAL] (default: 1)") var presenceInterval: String?
    @Option(help: "Seconds a user stays present after their last stream closed (a reconnect within it is no leave). [env: DIFFSTREAM_PRESENCE_GRACE] (default: 5)") var presenceGrace: String?
    @Option(help: "Most presence feeds held at once (one per feed with presence that someone has open or follows); past it a feed not held has none until one is dropped: _presence.FEED answers 503. [env: DIFFSTREAM_MAX_PRESENCE_FEEDS] (default: 10000)") var maxPresenceFeeds: String?
    @Option(help: "Seconds an example family's member without subscribers or use is kept before it is dropped. [env: DIFFSTREAM_FAMILY_IDLE] (default: 60)") var familyIdle: String?
    @Option(help: "Directory of the durable feed store; 'none' keeps feeds in memory only. [env: DIFFSTREAM_DATA] (default: ./data)") var data: String?
    @Option(help: "Redis holding the feeds several instances share, redis://[user:password@]host[:port][/db]; --data is then not used. [env: DIFFSTREAM_REDIS]") var redis: String?
    @Option(name: .customLong("redis-prefix"), help: "Prefix of every Redis key, so deployments can share one Redis. [env: DIFFSTREAM_REDIS_PREFIX] (default: diffstream)") var redisPrefix: String?
    @Flag(help: "Start even if the data is damaged: set the damaged feeds (or file) aside and keep the rest. [env: DIFFSTREAM_SET_ASIDE_DAMAGED=1]") var setAsideDamaged = false
    @Option(help: "Example view models to host: all, none, or a comma-separated list of home, week, blackjack, forecast, todo. [env: DIFFSTREAM_EXAMPLES] (default: all)") var examples: String?
    @Flag(help: "Run the live demo: the home feed changes every 2 s, the week feed every 3 s; every feed shows who is watching (--presence-names '*') unless --presence or --presence-names is given. [env: DIFFSTREAM_DEMO=1]") var demo = false

    static func main() async {
        do {
            let command = try parseAsRoot()
            guard let runnable = command as? DiffStreamCommand else {
                if var asynchronous = command as? AsyncParsableCommand {
                    try await asynchronous.run()
                } else {
                    var other = command
                    try other.run()
                }
                return
            }
            var settings = try runnable.settings()
            settings.logging.bootstrap()  // once, before any logger is made
            settings.server.logger = Logger(label: "diffstream")
            settings.server.requestLog = settings.logging.requestLog()
            try await runnable.serve(settings)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("diffstream: \(error.message)\n\(error.suggestsHelp ? "Run 'diffstream --help' for the options.\n" : "")".utf8))
            Foundation.exit(2)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            FileHandle.standardError.write(Data("diffstream: \(fullMessage(for: error))\n".utf8))
            Foundation.exit(2)
        }
    }
}
