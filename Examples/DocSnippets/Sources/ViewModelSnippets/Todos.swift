// docs/view-models.md, "Your own view model", verbatim:
import DiffStreamServer   // also brings what a view model is written with: Snapshot, Section, WireItem, HostedViewModel, …

struct Todos: HostedViewModel {
    struct Todo: Codable, Sendable { var id: String; var title: String; var done = false }
    struct State: Codable, Sendable { var todos: [Todo] = []; var next = 1 }
    struct Part: Identifiable, Equatable, WireSectionConvertible {
        var id: String; var title: String
        var wireSection: WireSection { WireSection(id: id, model: ["title": .string(title)]) }
    }
    struct Row: Identifiable, Equatable, WireItemConvertible {
        var id: String; var title: String; var done: Bool
        var wireItem: WireItem { WireItem(id: id, kind: "todo", model: ["title": .string(title), "done": .bool(done)]) }
    }
    struct Add: Decodable, Sendable { var title: String }
    struct Target: Decodable, Sendable { var id: String }

    var initialState: State { State() }

    func render(_ state: State) throws -> Snapshot<Part, Row> {
        try Snapshot {
            Section(Part(id: "todo", title: "To do")) {
                for t in state.todos where !t.done { Row(id: t.id, title: t.title, done: false) }
            }
            Section(Part(id: "done", title: "Done")) {
                for t in state.todos where t.done { Row(id: t.id, title: t.title, done: true) }
            }
        }
    }

    var actions: [HostedAction<State>] {
        [
            HostedAction("add", input: Add.self, fields: [.string("title")], isPublic: true) { state, input in
                guard (1...200).contains(input.title.count) else { throw InvalidInput(field: "title", "expected 1 to 200 characters, not \(input.title.count)") }
                state.todos.append(Todo(id: "t\(state.next)", title: input.title))
                state.next += 1
            },
            HostedAction("toggle", input: Target.self, fields: [.item("id", kind: "todo")]) { state, input in
                guard let i = state.todos.firstIndex(where: { $0.id == input.id }) else { throw InvalidInput(field: "id", "no such to-do") }
                state.todos[i].done.toggle()   // published as one move and one update
            },
        ]
    }
}
