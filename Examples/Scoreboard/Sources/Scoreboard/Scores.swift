import DiffStreamServer
import Foundation
import Logging
import Metrics

/// Two teams and their goals; `POST /feeds/scores/actions/goal {"team": "home"}` scores one.
struct Scoreboard: HostedViewModel {
    struct State: Codable, Sendable { var goals = ["home": 0, "away": 0] }
    struct Board: WireSectionConvertible { var id: String { "board" }; var wireSection: WireSection { WireSection(id: id, model: ["title": "Scores"]) } }
    struct Team: WireItemConvertible {
        var id: String, goals: Int
        var wireItem: WireItem { WireItem(id: id, kind: "team", model: ["goals": .number(Double(goals))]) }
    }
    struct Goal: Decodable, Sendable { var team: String }
    let goals = Counter(label: "scoreboard_goals_total")  // made after the server: shows on /metrics

    var initialState: State { State() }
    func render(_ state: State) throws -> Snapshot<Board, Team> {
        try Snapshot { Section(Board()) { for (team, goals) in state.goals.sorted(by: { $0.key < $1.key }) { Team(id: team, goals: goals) } } }
    }
    var actions: [HostedAction<State>] {
        [HostedAction("goal", input: Goal.self, fields: [.string("team")]) { [goals] state, goal in
            guard state.goals[goal.team] != nil else { throw InvalidInput(field: "team", "no team '\(goal.team)'") }
            state.goals[goal.team, default: 0] += 1
            goals.increment()
        }]
    }
}

@main struct Scores {
    static func main() async {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let environment = ProcessInfo.processInfo.environment
        var configuration = Server.Configuration()  // beside diffstream's own 8080 and ./data:
        configuration.port = UInt16(environment["SCOREBOARD_PORT"] ?? "") ?? 8090  // 0 picks a free port
        configuration.dataDirectory = environment["SCOREBOARD_DATA"] ?? "scoreboard-data"
        do {
            let server = try await Server(configuration: configuration)
            try await server.host(Scoreboard(), as: "scores")
            try await server.run()  // logs its URL; until SIGINT/SIGTERM, then a graceful shutdown
        } catch let error as Server.StartError {
            fail(hint(error))
        } catch {
            fail("\(error)")
        }
    }

    /// The library's words, and what to do in this program's terms.
    static func hint(_ error: Server.StartError) -> String {
        switch error.cause {
        case .addressInUse?: "\(error.message); set SCOREBOARD_PORT to another port (0 picks a free one)"
        case .dataDirectoryLocked?: "\(error.message); set SCOREBOARD_DATA to another folder"
        case nil: error.message
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("scoreboard: \(message)\n".utf8))
        exit(1)
    }
}
