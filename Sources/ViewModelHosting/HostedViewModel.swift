import FeedCore
import DiffStream
import DiffStreamJSON
import Foundation

/// A view model the server hosts. The framework owns its ``State``: it runs the actions one at a
/// time, renders every new state, and publishes the difference from the previous snapshot as one
/// batch to the feed's subscribers.
///
/// ```swift
/// struct Counter: HostedViewModel {
///     struct State: Codable, Sendable { var count = 0 }
///     var initialState: State { State() }
///     func render(_ state: State) throws -> Snapshot<CounterSection, CounterItem> {
///         try Snapshot { Section(CounterSection()) { CounterItem(count: state.count) } }
///     }
///     var actions: [HostedAction<State>] {
///         [HostedAction("increment") { state in state.count += 1 }]
///     }
/// }
/// try await feeds.host(Counter(), as: "counter")
/// ```
public protocol HostedViewModel: Sendable {
    /// Everything the view model remembers. `Codable`, so a durable store can keep it.
    associatedtype State: Codable & Sendable
    /// The typed sections of the snapshot; they convert to ``WireSection``.
    associatedtype SectionModel: WireSectionConvertible
    /// The typed items of the snapshot; they convert to ``WireItem``.
    associatedtype ItemModel: WireItemConvertible

    /// The state a newly hosted feed starts from.
    var initialState: State { get }

    /// The snapshot for a state, written with the result-builder DSL. A throw publishes nothing and
    /// keeps the previous state; the request that caused it is answered with the reason.
    func render(_ state: State) throws -> Snapshot<SectionModel, ItemModel>

    /// The named actions, `POST /feeds/{feed}/actions/{name}`. None by default.
    var actions: [HostedAction<State>] { get }

    /// Whether `PATCH /feeds/{feed}` merges a partial state into the current one (a JSON merge
    /// patch, RFC 7396: objects merge, anything else replaces, `null` clears). False by default.
    var acceptsPatch: Bool { get }

    /// Whether the feed has a presence feed, `_presence.FEED`, of who is watching it (each member's
    /// own, for a family; ``HostedPresence``). `.off` by default.
    var presence: HostedPresence { get }

    /// Checks a state that a `PATCH` produced, before it is rendered. Throw ``InvalidInput`` naming
    /// the field to refuse it (`422`, nothing changes). Accepts everything by default.
    func validate(_ state: State) throws

    /// The version of ``State``'s kept JSON form, 1 by default. Raise it, and give ``migrate(from:_:)``,
    /// with every change under which a state kept by the previous program no longer decodes, or decodes
    /// to something else: a new field (even one with a default: synthesized `Codable` ignores property
    /// defaults), a removed or renamed field or case, a changed type or meaning. From version 2 on, the
    /// state is kept with the key `"_stateVersion"` beside its fields, which earlier programs ignore.
    static var stateVersion: Int { get }

    /// A state kept by a program of an earlier ``stateVersion`` (`version`, 1 for bytes without a version),
    /// as this program's ``State``: `bytes` are the kept JSON object (with its `"_stateVersion"`, if any).
    /// By default they are decoded as ``State``, which throws when they no longer fit.
    ///
    /// A throw leaves the kept state as it is: the feed or family member is not made or changed, its
    /// requests answer `500` naming the feed and the reason, until a program reads it or an operator
    /// resets it (`DELETE /feeds/{feed}?reset=kept-state`).
    func migrate(from version: Int, _ bytes: [UInt8]) throws -> State
}

extension HostedViewModel {
    public var actions: [HostedAction<State>] { [] }
    public var acceptsPatch: Bool { false }
    public var presence: HostedPresence { .off }
    public func validate(_ state: State) throws {}
    public static var stateVersion: Int { 1 }
    public func migrate(from version: Int, _ bytes: [UInt8]) throws -> State {
        try JSONDecoder().decode(State.self, from: Data(bytes))
    }
}

/// Input that a view model refuses: answered `422` with the field and the reason, and the state is
/// left unchanged. Throw it from an action or from ``HostedViewModel/validate(_:)``.
public struct InvalidInput: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the problem is, e.g. `title` or `suggested[2].type`.
    public var field: String
    /// What is wrong, in words a user can act on.
    public var reason: String

    public init(field: String, _ reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { "\(field): \(reason)" }
}

/// One field an action takes, as listed by `GET /feeds` so that clients can offer the action.
public struct ActionField: Sendable, Equatable {
    /// The JSON type of a field.
    public enum FieldType: Sendable, Equatable {
        case string
        case integer
        case number
        case boolean
        /// The id of an item of the feed, of the given kind: clients offer the action on such items.
        case item(kind: String)
    }

    public var name: String
    public var type: FieldType
    /// The field may be left out.
    public var isOptional: Bool
    /// The field may be `null`.
    public var isNullable: Bool

    public init(_ name: String, _ type: FieldType, optional: Bool = false, nullable: Bool = false) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.isNullable = nullable
    }

    public static func string(_ name: String, optional: Bool = false) -> ActionField { ActionField(name, .string, optional: optional) }
    public static func item(_ name: String, kind: String, optional: Bool = false, nullable: Bool = false) -> ActionField {
        ActionField(name, .item(kind: kind), optional: optional, nullable: nullable)
    }
}

/// A named action of a hosted view model: its declared fields, whether it is public, and what it does
/// to the state with its input decoded from the request's JSON body.
public struct HostedAction<State>: Sendable {
    public let name: String
    public let fields: [ActionField]
    /// A public action may be allowed without credentials where writes otherwise need them.
    public let isPublic: Bool
    package let perform: @Sendable (inout State, [UInt8]) throws -> Void

    /// An action with a typed input, decoded from the body (a JSON object) with `JSONDecoder`. A
    /// body with a key that `fields` does not declare, or one that does not decode, is `422` naming
    /// the field.
    public init<Input: Decodable & Sendable>(
        _ name: String, input: Input.Type, fields: [ActionField], isPublic: Bool = false,
        perform: @escaping @Sendable (inout State, Input) throws -> Void
    ) {
        self.name = name
        self.fields = fields
        self.isPublic = isPublic
        self.perform = { state, body in
            try perform(&state, try ActionInput.decode(Input.self, from: body, fields: fields))
        }
    }

    /// An action without input; a body, if any, must be an empty JSON object.
    public init(_ name: String, isPublic: Bool = false, perform: @escaping @Sendable (inout State) throws -> Void) {
        self.name = name
        self.fields = []
        self.isPublic = isPublic
        self.perform = { state, body in
            _ = try ActionInput.object(body, fields: [])
            try perform(&state)
        }
    }
}
