import FeedServer
import Foundation
import HTTPServer

/// A configuration value that cannot be used; the message says which and why.
struct ConfigurationError: Error {
    var message: String
}

/// The resolved configuration: flags, then environment, then defaults; every value validated.
struct Settings {
    var server: HTTPServer.Configuration
    var publicDirectory: String
    var api: FeedAPI.Options
    var replay: Int
    var demo: Bool
}

extension DiffStreamCommand {
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

        let logLevelText = value(logLevel, "log-level")
        let level: Logger.Level
        if let (text, source) = logLevelText {
            guard let parsed = Logger.Level(name: text) else { throw ConfigurationError(message: "\(source) must be debug, info, warning, error or off, not '\(text)'") }
            level = parsed
        } else {
            level = .info
        }
        var configuration = HTTPServer.Configuration(logger: Logger(label: "diffstream", level: level))
        configuration.host = value(host, "host")?.text ?? "127.0.0.1"
        configuration.port = UInt16(try integer(port, "port", 0...65535, default: 8080))
        configuration.heartbeat = Double(try integer(heartbeat, "heartbeat", 1...3600, default: 15))
        configuration.maxConnections = try integer(maxConnections, "max-connections", 1...1_000_000, default: 10_000)
        configuration.streamBufferLimit = try integer(streamBuffer, "stream-buffer", 4096...(1 << 30), default: 1 << 20)
        configuration.limits.headerTimeout = Double(try integer(headerTimeout, "header-timeout", 1...3600, default: 10))
        configuration.limits.idleTimeout = Double(try integer(idleTimeout, "idle-timeout", 1...86400, default: 60))
        configuration.limits.bodyTimeout = Double(try integer(bodyTimeout, "body-timeout", 1...3600, default: 30))
        configuration.limits.writeTimeout = Double(try integer(writeTimeout, "write-timeout", 1...3600, default: 30))
        configuration.limits.maxBodyBytes = try integer(maxBody, "max-body", 0...(1 << 30), default: 8 << 20)
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
        case (let cert?, let key?): configuration.tls = TLSConfiguration(certificatePath: cert.text, privateKeyPath: key.text)
        case (nil, nil): break
        default: throw ConfigurationError(message: "--tls-cert and --tls-key go together: give both or neither")
        }

        let directory = value(publicDirectory, "public")?.text ?? "Public"
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigurationError(message: "the public directory '\(directory)' does not exist (set it with --public)")
        }
        let token = value(self.token, "token")?.text
        if let token, token.count < 8 || token.contains(where: { $0.isWhitespace }) {
            throw ConfigurationError(message: "the token must be at least 8 characters with no spaces")
        }
        let demoFlag = demo || ["1", "true", "on", "yes"].contains(environment["DIFFSTREAM_DEMO"]?.lowercased() ?? "")
        return Settings(
            server: configuration, publicDirectory: directory,
            api: FeedAPI.Options(token: token, allowOrigin: value(allowOrigin, "allow-origin")?.text, compression: configuration.compression),
            replay: try integer(replay, "replay", 0...1_000_000, default: 1024), demo: demoFlag)
    }
}
