import DiffStream
import DiffStreamJSON
import FeedCore
import ViewModelHosting

/// A to-do list in two sections, "To do" and "Done". Items keep one order; each section shows the
/// items of its state in that order, so toggling an item moves it across sections (one `move` plus
/// one `update`).
public struct TodoViewModel: HostedViewModel {
    public struct Todo: Codable, Sendable, Equatable {
        public var id: String
        public var title: String
        public var done: Bool
        public init(id: String, title: String, done: Bool = false) {
            self.id = id
            self.title = title
            self.done = done
        }
    }

    public struct State: Codable, Sendable, Equatable {
        public var todos: [Todo] = []
        /// The number in the next new item's id (`t1`, `t2`, …): ids are never reused.
        public var nextNumber = 1
        public init() {}
    }

    /// The most items the list holds; adding more is refused with `422`.
    public static let maximumCount = 500
    /// Titles are 1 to 200 characters.
    public static let titleLengths = 1...200

    public init() {}

    public var initialState: State { State() }

    // MARK: Rendering

    public struct TodoSection: Identifiable, Equatable, WireSectionConvertible {
        public var id: String
        var title: String
        public var wireSection: WireSection { WireSection(id: id, model: ["title": .string(title)]) }
    }

    public struct TodoItem: Identifiable, Equatable, WireItemConvertible {
        var todo: Todo
        public var id: String { todo.id }
        public var wireItem: WireItem {
            WireItem(id: todo.id, kind: "todo", model: ["title": .string(todo.title), "done": .bool(todo.done)])
        }
    }

    public func render(_ state: State) throws -> Snapshot<TodoSection, TodoItem> {
        try Snapshot {
            Section(TodoSection(id: "todo", title: "To do")) {
                for todo in state.todos where !todo.done { TodoItem(todo: todo) }
            }
            Section(TodoSection(id: "done", title: "Done")) {
                for todo in state.todos where todo.done { TodoItem(todo: todo) }
            }
        }
    }

    // MARK: Actions

    struct Add: Decodable { var title: String; var before: String? }
    struct Target: Decodable { var id: String }
    struct Rename: Decodable { var id: String; var title: String }
    struct Move: Decodable {
        var id: String
        var before: String?
        enum CodingKeys: String, CodingKey { case id, before }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            before = try container.decode(String?.self, forKey: .before)  // required, may be null (the end)
        }
    }

    public var actions: [HostedAction<State>] {
        [
            HostedAction("add", input: Add.self, fields: [.string("title"), .item("before", kind: "todo", optional: true)], isPublic: true) { state, input in
                guard state.todos.count < Self.maximumCount else {
                    throw InvalidInput(field: "title", "the list is full (\(Self.maximumCount) items): remove some first")
                }
                let todo = Todo(id: "t\(state.nextNumber)", title: try Self.checked(input.title), done: false)
                let index = try input.before.map { try state.index(of: $0, field: "before") } ?? state.todos.endIndex
                state.todos.insert(todo, at: index)
                state.nextNumber += 1
            },
            HostedAction("toggle", input: Target.self, fields: [.item("id", kind: "todo")], isPublic: true) { state, input in
                state.todos[try state.index(of: input.id, field: "id")].done.toggle()
            },
            HostedAction("rename", input: Rename.self, fields: [.item("id", kind: "todo"), .string("title")], isPublic: true) { state, input in
                let index = try state.index(of: input.id, field: "id")
                state.todos[index].title = try Self.checked(input.title)
            },
            HostedAction("remove", input: Target.self, fields: [.item("id", kind: "todo")], isPublic: true) { state, input in
                state.todos.remove(at: try state.index(of: input.id, field: "id"))
            },
            HostedAction("move", input: Move.self, fields: [.item("id", kind: "todo"), .item("before", kind: "todo", nullable: true)], isPublic: true) { state, input in
                let todo = state.todos[try state.index(of: input.id, field: "id")]
                if let before = input.before { _ = try state.index(of: before, field: "before") }
                guard input.before != input.id else { return }
                state.todos.removeAll { $0.id == todo.id }
                let index = try input.before.map { try state.index(of: $0, field: "before") } ?? state.todos.endIndex
                state.todos.insert(todo, at: index)
            },
            HostedAction("clearDone", isPublic: true) { state in
                state.todos.removeAll { $0.done }
            },
        ]
    }

    static func checked(_ title: String) throws -> String {
        guard titleLengths.contains(title.count) else {
            throw InvalidInput(field: "title", "expected \(titleLengths.lowerBound) to \(titleLengths.upperBound) characters, not \(title.count)")
        }
        return title
    }
}

extension TodoViewModel.State {
    func index(of id: String, field: String) throws -> Int {
        guard let index = todos.firstIndex(where: { $0.id == id }) else {
            throw InvalidInput(field: field, "no to-do with the id '\(id.prefix(80))'")
        }
        return index
    }
}
