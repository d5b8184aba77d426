// README.md, "Host view models from your own program", verbatim (Support.swift: the view model it hosts):
import DiffStreamServer
import Foundation
import Logging

@main struct Scores {
    static func main() async {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)   // or any swift-log backend
        var configuration = Server.Configuration()                  // a library's defaults
        configuration.port = 8090                                   // beside diffstream's own 8080
        configuration.dataDirectory = "scoreboard-data"
        do {
            let server = try await Server(configuration: configuration)
            try await server.host(Scoreboard(), as: "scores")
            try await server.run()      // until SIGINT/SIGTERM, then a graceful shutdown
        } catch {
            FileHandle.standardError.write(Data("scoreboard: \(error)\n".utf8))  // one line, not a backtrace
            exit(1)
        }
    }
}
