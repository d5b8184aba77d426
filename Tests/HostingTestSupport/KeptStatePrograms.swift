import DiffStream
import DiffStreamJSON
import Foundation
import ViewModelHosting

/// Two builds of one program, for the suites of kept state across a new program (issue 51, item 3:
/// KeptStateVersionTests over the local stores, KeptStateVersionRedisTests over Redis): its view
/// model's `State` at version 1, then at version 2 with a new field (`var done = false`, which
/// synthesized `Codable` does not default when decoding), with and without a migration.
public enum KeptStatePrograms {
    public struct Part: Identifiable, Equatable, WireSectionConvertible {
        public var id = "tasks"
        public var wireSection: WireSection { WireSection(id: id, model: ["title": "Tasks"]) }
    }

    public struct Row: Identifiable, Equatable, WireItemConvertible {
        public var id = "task"
        public var title: String
        public var done: Bool
        public var wireItem: WireItem { WireItem(id: id, kind: "task", model: ["title": .string(title), "done": .bool(done)]) }
    }

    static func snapshot(_ title: String, done: Bool) throws -> Snapshot<Part, Row> {
        try Snapshot { Section(Part()) { Row(title: title, done: done) } }
    }

    /// The program's first release.
    public struct V1: HostedViewModel {
        public struct State: Codable, Sendable, Equatable {
            public var title = ""
            public var count = 0

            public init(title: String = "", count: Int = 0) {
                self.title = title
                self.count = count
            }
        }

        public init() {}
        public var initialState: State { State() }
        public var acceptsPatch: Bool { true }
        public func render(_ state: State) throws -> Snapshot<Part, Row> { try snapshot(state.title, done: false) }
        public var actions: [HostedAction<State>] { [HostedAction("increment") { state in state.count += 1 }] }
    }

    /// The next release, which gives no migration: the default decodes version 1's bytes, which lack `done`.
    public struct V2: HostedViewModel {
        public struct State: Codable, Sendable, Equatable {
            public var title = ""
            public var count = 0
            public var done = false

            public init(title: String = "", count: Int = 0, done: Bool = false) {
                self.title = title
                self.count = count
                self.done = done
            }
        }

        public init() {}
        public static var stateVersion: Int { 2 }
        public var initialState: State { State() }
        public var acceptsPatch: Bool { true }
        public func render(_ state: State) throws -> Snapshot<Part, Row> { try snapshot(state.title, done: state.done) }
        public var actions: [HostedAction<State>] { [HostedAction("increment") { state in state.count += 1 }] }
    }

    /// The next release with its migration from version 1.
    public struct V2Migrating: HostedViewModel {
        public typealias State = V2.State

        public init() {}
        public static var stateVersion: Int { 2 }
        public var initialState: State { State() }
        public var acceptsPatch: Bool { true }
        public func render(_ state: State) throws -> Snapshot<Part, Row> { try snapshot(state.title, done: state.done) }
        public var actions: [HostedAction<State>] { [HostedAction("increment") { state in state.count += 1 }] }

        public func migrate(from version: Int, _ bytes: [UInt8]) throws -> State {
            let old = try JSONDecoder().decode(V1.State.self, from: Data(bytes))
            return State(title: old.title, count: old.count, done: false)
        }
    }

    /// The bytes of a `PATCH` body.
    public static func patch(_ json: String) -> [UInt8] { Array(json.utf8) }

    /// Whether `error` is the refusal of `feed`, whose kept state this program cannot read: it names
    /// the feed and the decoding error (`done` missing).
    public static func isUnreadable(_ error: ViewModelError, _ feed: String) -> Bool {
        guard case .keptStateUnreadable(let named, let reason) = error else { return false }
        return named == feed && reason.contains("done: missing")
    }
}
