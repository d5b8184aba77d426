// Support: the view model README.md's program hosts (Examples/Scoreboard has the whole one).
import DiffStreamServer

struct Scoreboard: HostedViewModel {
    struct State: Codable, Sendable { var goals = ["home": 0, "away": 0] }
    struct Board: WireSectionConvertible { var id: String { "board" }; var wireSection: WireSection { WireSection(id: id, model: ["title": "Scores"]) } }
    struct Team: WireItemConvertible {
        var id: String, goals: Int
        var wireItem: WireItem { WireItem(id: id, kind: "team", model: ["goals": .number(Double(goals))]) }
    }

    var initialState: State { State() }
    func render(_ state: State) throws -> Snapshot<Board, Team> {
        try Snapshot { Section(Board()) { for (team, goals) in state.goals.sorted(by: { $0.key < $1.key }) { Team(id: team, goals: goals) } } }
    }
}
