import DiffStreamExamples
import DiffStreamRedis
import DiffStreamServer
import Foundation
import LogLines
import Logging

/// A configuration value that cannot be used; the message says which and why.
struct ConfigurationError: Error {
    var message: String
    /// Whether the message ends with the hint to read `--help` (not for a start that failed on a
    /// port, a folder or a file: the one line says what to do).
    var suggestsHelp = true
}

/// The resolved configuration: flags, then environment, then defaults; every value validated.
struct Settings {
    /// Everything the server is made with (the command's defaults: ./Public, ./data).
    var server: Server.Configuration
    /// The example view models the command hosts (`--examples`; default: every one).
    var examples: [String]
    /// Whether the home and week examples get live changes (`--demo`).
    var demo: Bool
    /// The limits of the example families (`--family-idle`).
    var familyLimits = FamilyLimits()
    /// `--log-level` and `--log-format`.
    var logging: LogSettings
}

/// How log lines are written: the least severe level (nil for `off`) and the format.
struct LogSettings {
    var level: Logger.Level?
    var format: LogFormat

    /// The `--log-level` values and the swift-log level each stands for (nil: nothing is logged).
    static let levels: [String: Logger.Level?] = ["debug": .debug, "info": .info, "warning": .warning, "error": .error, "off": .none]

    /// A logger that writes `info` lines whatever the level (in the configured format): for the one line
    /// a quiet log still gets, the port the server listens on.
    func announcer() -> Logger {
        let format = self.format
        return Logger(label: "diffstream") { LineLogHandler(label: $0, format: format, level: .info) }
    }

    /// The server's request lines, written by a ``LineLogHandler`` like every other line, field by
    /// field (nil with `off`: none).
    func requestLog() -> LineLogHandler? {
        level.map { LineLogHandler(label: "diffstream", format: format, level: $0) }
    }

    /// Makes every `Logging.Logger` of the process write through ``LineLogHandler``. Call once.
    func bootstrap() {
        let level = self.level
        let format = self.format
        LoggingSystem.bootstrap { label in
            guard let level else { return SwiftLogNoOpLogHandler(label) }
            return LineLogHandler(label: label, format: format, level: level)
        }
    }
}

/// Reading the JWT secret: `--jwt-secret-file PATH`, `DIFFSTREAM_JWT_SECRET_FILE` (a path), or
/// `DIFFSTREAM_JWT_SECRET` (the secret itself). One trailing newline of a file is dropped.
enum JWTSecret {
    static func load(file: String?, environment: [String: String]) throws -> [UInt8]? {
        if let path = file ?? environment["DIFFSTREAM_JWT_SECRET_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            guard var bytes = FileManager.default.contents(atPath: path).map(Array.init) else {
                throw ConfigurationError(message: "cannot read the JWT secret file '\(path)'")
            }
            if bytes.last == 0x0A { bytes.removeLast() }
            if bytes.last == 0x0D { bytes.removeLast() }
            return bytes
        }
        if let secret = environment["DIFFSTREAM_JWT_SECRET"], !secret.isEmpty { return Array(secret.utf8) }
        return nil
    }
}

extension DiffStreamCommand {
    /// A bound as a person writes it: `3600`, `0.1`.
    static func spelled(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }

    func settings(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Settings {
        func value(_ flag: String?, _ name: String) -> (text: String, source: String)? {
            if let flag { return (flag, "--\(name)") }
            let key = "DIFFSTREAM_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
            if let env = environment[key], !env.isEmpty { return (env, key) }
            return nil
        }
        func integer(_ flag: String?, _ name: String, _ range: ClosedRange<Int>, default fallback: Int) throws -> Int {
            guard let (text, source) = value(flag, name) else { return fallback }
            guard let number = Int(text), range.contains(number) else {
                throw ConfigurationError(message: "\(source) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return number
        }

        /// Seconds, whole or with a fraction (`0.5`), within `range`.
        func seconds(_ flag: String?, _ name: String, _ range: ClosedRange<Double>, default fallback: Double) throws -> Double {
            guard let (text, source) = value(flag, name) else { return fallback }
            guard !text.contains(where: { !("0"..."9").contains($0) && $0 != "." }), let number = Double(text), range.contains(number) else {
                throw ConfigurationError(message: "\(source) must be a number of seconds from \(Self.spelled(range.lowerBound)) to \(Self.spelled(range.upperBound)), not '\(text)'")
            }
            return number
        }

        let logLevelText = value(logLevel, "log-level")
        var logging = LogSettings(level: .info, format: .text)
        if let (text, source) = logLevelText {
            guard let parsed = LogSettings.levels[text.lowercased()] else { throw ConfigurationError(message: "\(source) must be debug, info, warning, error or off, not '\(text)'") }
            logging.level = parsed
        }
        if let (text, source) = value(logFormat, "log-format") {
            guard let parsed = LogFormat(rawValue: text.lowercased()) else { throw ConfigurationError(message: "\(source) must be text or json, not '\(text)'") }
            logging.format = parsed
        }
        var configuration = Server.Configuration()
        configuration.host = value(host, "host")?.text ?? "127.0.0.1"
        configuration.port = UInt16(try integer(port, "port", 0...65535, default: 8080))
        configuration.heartbeat = try seconds(heartbeat, "heartbeat", 0.1...3600, default: 15)
        configuration.maxConnections = try integer(maxConnections, "max-connections", 1...1_000_000, default: 10_000)
        configuration.maxConnectionsPerAddress = try integer(maxConnectionsPerIp, "max-connections-per-ip", 0...1_000_000, default: 256)
        configuration.loops = try integer(loops, "loops", 1...256, default: ProcessInfo.processInfo.activeProcessorCount)
        configuration.streamBufferLimit = try integer(streamBuffer, "stream-buffer", 4096...(1 << 30), default: 1 << 20)
        configuration.headerTimeout = try seconds(headerTimeout, "header-timeout", 0.1...3600, default: 10)
        configuration.idleTimeout = try seconds(idleTimeout, "idle-timeout", 0.1...86400, default: 60)
        configuration.bodyTimeout = try seconds(bodyTimeout, "body-timeout", 0.1...3600, default: 30)
        configuration.writeTimeout = try seconds(writeTimeout, "write-timeout", 0.1...3600, default: 30)
        configuration.maxBodyBytes = try integer(maxBody, "max-body", 0...(1 << 30), default: 8 << 20)
        if let (text, source) = value(compression, "compression") {
            switch text.lowercased() {
            case "on", "true", "1", "yes": configuration.compression = true
            case "off", "false", "0", "no": configuration.compression = false
            default: throw ConfigurationError(message: "\(source) must be on or off, not '\(text)'")
            }
        }
        let cert = value(tlsCert, "tls-cert")
        let key = value(tlsKey, "tls-key")
        switch (cert, key) {
        case (let cert?, let key?):
            configuration.tlsCertificatePath = cert.text
            configuration.tlsPrivateKeyPath = key.text
        case (nil, nil): break
        default: throw ConfigurationError(message: "--tls-cert and --tls-key go together: give both or neither")
        }

        // The page: --public (or DIFFSTREAM_PUBLIC), else ./Public if there is one, else the page built
        // into the binary, so the binary serves the demo from any folder.
        let givenDirectory = value(publicDirectory, "public")?.text
        let directory = givenDirectory ?? "Public"
        var isDirectory: ObjCBool = false
        let directoryExists = FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) && isDirectory.boolValue
        if !directoryExists, givenDirectory != nil {
            throw ConfigurationError(message: "the public directory '\(directory)' does not exist (set it with --public)")
        }
        let token = value(self.token, "token")?.text
        if let token, token.count < 8 || token.contains(where: { $0.isWhitespace }) {
            throw ConfigurationError(message: "the token must be at least 8 characters with no spaces")
        }
        func enabled(_ flag: Bool, _ name: String) -> Bool {
            flag || ["1", "true", "on", "yes"].contains(environment[name]?.lowercased() ?? "")
        }
        configuration.publicDirectory = directoryExists ? directory : nil
        configuration.servesBuiltInPage = !directoryExists
        configuration.token = token
        configuration.allowOrigin = value(allowOrigin, "allow-origin")?.text
        if let (text, source) = value(publicOrigin, "public-origin") {
            guard let url = URLComponents(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme.lowercased()),
                  url.host?.isEmpty == false, url.path.isEmpty || url.path == "/", url.query == nil else {
                throw ConfigurationError(message: "\(source) must be an origin such as https://example.com or https://example.com:8443, not '\(text)'")
            }
            configuration.publicOrigin = text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        let dataText = value(data, "data")?.text ?? "data"
        configuration.dataDirectory = dataText == "none" ? nil : dataText
        configuration.setAsideDamaged = enabled(setAsideDamaged, "DIFFSTREAM_SET_ASIDE_DAMAGED")
        if let url = value(redis, "redis")?.text {
            configuration.sharing = RedisSharing(url: url, prefix: value(redisPrefix, "redis-prefix")?.text ?? "diffstream")
        }
        configuration.replay = try integer(replay, "replay", 0...1_000_000, default: 1024)
        configuration.maxStreamFeeds = try integer(maxStreamFeeds, "max-stream-feeds", 1...10_000, default: 100)
        // Who is here (issue 55).
        for (flag, name) in [(presence, "presence"), (presenceNames, "presence-names")] {
            let patterns = (value(flag, name)?.text ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if let bad = patterns.first(where: { !FeedID.isValid($0.replacingOccurrences(of: "*", with: "x")) }) {
                throw ConfigurationError(message: "--\(name): '\(bad)' is not a feed pattern (a feed name, * matching any characters)")
            }
            if name == "presence" { configuration.presence = patterns } else { configuration.presenceNames = patterns }
        }
        // The demo shows who is watching each feed (the page's "watching" line), with names where tokens
        // carry them, unless the flags say which feeds have presence.
        if enabled(demo, "DIFFSTREAM_DEMO") && value(presence, "presence") == nil && value(presenceNames, "presence-names") == nil {
            configuration.presenceNames = ["*"]
        }
        configuration.presenceInterval = try seconds(presenceInterval, "presence-interval", 0.01...60, default: 1)
        configuration.presenceGrace = try seconds(presenceGrace, "presence-grace", 0...3600, default: 5)
        configuration.maxPresenceFeeds = try integer(maxPresenceFeeds, "max-presence-feeds", 1...10_000_000, default: 10_000)

        // Storage limits (issue 15).
        configuration.maxFeeds = try integer(maxFeeds, "max-feeds", 1...10_000_000, default: 10_000)
        configuration.maxFeedBytes = try integer(maxFeedBytes, "max-feed-bytes", 1024...(1 << 40), default: 8 << 20)
        configuration.maxStoreBytes = try integer(
            maxStoreBytes, "max-store-bytes", 4096...(1 << 50),
            default: configuration.sharing?.defaultMaxStoreBytes ?? StorageLimits.defaultMaxStoreBytes(dataDirectory: configuration.dataDirectory))

        // Rights (issue 13).
        let secret = try JWTSecret.load(file: jwtSecretFile, environment: environment)
        var publicKeyPEM: String?
        if let (path, source) = value(jwtPublicKey, "jwt-public-key") {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(message: "\(source): cannot read the public key file '\(path)'")
            }
            publicKeyPEM = text
        }
        configuration.jwtSecret = secret
        configuration.jwtPublicKeyPEM = publicKeyPEM
        let privateReads = enabled(privateFlag, "DIFFSTREAM_PRIVATE")
        let publicFeedNames = (value(publicFeeds, "public-feeds")?.text ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let bad = publicFeedNames.first(where: { !FeedID.isValid($0) }) {
            throw ConfigurationError(message: "--public-feeds: '\(bad)' is not a feed name")
        }
        if privateReads && token == nil && secret == nil && publicKeyPEM == nil {
            throw ConfigurationError(message: "--private needs a way to grant reads: --jwt-secret-file, --jwt-public-key or --token")
        }
        configuration.privateReads = privateReads
        configuration.publicFeeds = Set(publicFeedNames)
        configuration.openWrites = enabled(openWrites, "DIFFSTREAM_OPEN_WRITES")
        let boundNames = (value(boundFamilies, "bound-families")?.text ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if let bad = boundNames.first(where: { !FeedID.isValid($0) }) {
            throw ConfigurationError(message: "--bound-families: '\(bad)' is not a family prefix")
        }
        if !boundNames.isEmpty && secret == nil && publicKeyPEM == nil {
            throw ConfigurationError(message: "--bound-families needs signed tokens to learn who a user is: --jwt-secret-file or --jwt-public-key")
        }
        configuration.boundFamilies = Dictionary(boundNames.map { ($0, SubjectKey.escaped) }, uniquingKeysWith: { first, _ in first })
        var familyLimits = FamilyLimits()
        familyLimits.idle = try seconds(familyIdle, "family-idle", 0.05...86_400, default: familyLimits.idle)
        var examples = Examples.names
        if let (text, source) = value(self.examples, "examples") {
            switch text.lowercased() {
            case "all": break
            case "none": examples = []
            default:
                examples = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                for name in examples where !Examples.names.contains(name) {
                    throw ConfigurationError(message: "\(source) must be all, none, or a comma-separated list of \(Examples.names.joined(separator: ", ")); '\(name)' is not an example")
                }
            }
        }
        return Settings(server: configuration, examples: examples, demo: enabled(demo, "DIFFSTREAM_DEMO"), familyLimits: familyLimits, logging: logging)
    }
}
