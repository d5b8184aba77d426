import DiffStreamExamples
import DiffStreamServer
import Foundation
import Logging

extension DiffStreamCommand {
    /// Hosts the examples, starts the server and runs until SIGINT or SIGTERM, then shuts down
    /// gracefully and exits 0.
    func serve(_ settings: Settings) async throws {
        let server: Server
        do {
            server = try await Server(configuration: settings.server)
        } catch where error.kind == .stopped {
            settings.server.logger.info("\(error.message)")
            Foundation.exit(0)
        } catch {
            throw ConfigurationError(message: Self.message(for: error), suggestsHelp: false)
        }
        do {
            for source in try await Examples.host(settings.examples, on: server.hosted, demo: settings.demo, familyLimits: settings.familyLimits) {
                server.cancelAtShutdown(source)
            }
        } catch {
            await server.shutdown()  // the data directory's lock is released
            throw ConfigurationError(message: error.description, suggestsHelp: false)
        }
        do {
            try await server.start()
        } catch {
            throw ConfigurationError(message: Self.message(for: error), suggestsHelp: false)
        }
        if settings.server.logger.logLevel > .info {
            settings.logging.announcer().info("diffstream listening on \(server.url)")  // the port is announced even to a quiet log
        }
        try await server.run()
        Foundation.exit(0)
    }

    /// What the command says about a start that failed: the library's words, with the flag to use.
    static func message(for error: Server.StartError) -> String {
        switch (error.kind, error.cause) {
        case (.damagedData(let directory, let feeds), _):
            "the data in '\(directory)' cannot be trusted: \(feeds.joined(separator: "; ")); start with --set-aside-damaged to skip those feeds"
        case (_, .addressInUse(_, let port)?):
            "\(error.message); stop it, or choose another port with --port (--port 0 picks a free one)\(port == 8080 ? ", e.g. --port 8081" : "")"
        case (_, .dataDirectoryLocked?):
            "\(error.message); stop it or choose another --data"
        default:
            error.message
        }
    }
}
