// action-host: the todo example (`TodoViewModel`) hosted as a FAMILY, `todo.<key>`, so that actions can be
// measured on many feeds at once (issue 39, item 4: Benchmarks/write-peers.sh's `action16` kind, 16 writers
// each POSTing /feeds/todo.w<k>/actions/rename). The `diffstream` binary hosts the todo example once, and
// no example family has actions. Each member starts with 10 items, t1..t10 (the ids `rename` targets).
// Run as diffstream is in write-peers.sh: log level warning, no cap on connections per address.
//
//   swift build -c release --static-swift-stdlib --package-path Benchmarks --product action-host
//   action-host [--port N] [--data DIR|none] [--loops N]
//
// --port 0 (the default) picks a free port; the first line on stdout is always `port=N`, once listening.
// --data none (the default) keeps the feeds in memory. Stops on SIGINT or SIGTERM.
import DiffStreamExamples
import DiffStreamServer
import Foundation
import LogLines
import Logging

var configuration = Server.Configuration()
configuration.port = 0
var arguments = CommandLine.arguments.dropFirst()
func usage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("action-host: \(message)\nusage: action-host [--port N] [--data DIR|none] [--loops N]\n".utf8))
    exit(2)
}
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst() else { usage("\(flag) needs a value") }
    switch flag {
    case "--port":
        guard let port = UInt16(value) else { usage("bad port '\(value)'") }
        configuration.port = port
    case "--data": configuration.dataDirectory = value == "none" ? nil : value
    case "--loops":
        guard let loops = Int(value), loops > 0 else { usage("bad loop count '\(value)'") }
        configuration.loops = loops
    default: usage("unknown flag \(flag)")
    }
}
LoggingSystem.bootstrap { LineLogHandler(label: $0, level: .warning) }
configuration.logger = Logger(label: "action-host")
configuration.maxConnections = 20_000
configuration.maxConnectionsPerAddress = 0

/// Every member's state when first made: the items t1..t10, as 10 `add` actions would leave it.
var initial = TodoViewModel.State()
initial.todos = (1...10).map { TodoViewModel.Todo(id: "t\($0)", title: "item \($0)") }
initial.nextNumber = 11
let state = initial

let server = try await Server(configuration: configuration)
try await server.host(family: "todo", TodoViewModel()) { _ in state }
let port = try await server.start()
FileHandle.standardOutput.write(Data("port=\(port)\n".utf8))  // unbuffered: the script reads it at once
try await server.run()
