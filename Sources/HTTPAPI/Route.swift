import FeedCore
import ViewModelHosting
import HTTPCore

/// A path pattern of the route table: literal segments, `{name}` parameters (one segment each) and
/// at most one trailing `{name...}` (the rest of the path, any number of segments).
///
/// Its ``description`` is the pattern as written, e.g. `/feeds/{feed}/actions/{action}`: a bounded
/// label for a request (say, of a request-duration metric), never the raw path.
public struct RoutePattern: Sendable, Hashable, CustomStringConvertible {
    package enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
        case rest(String)

        var isRest: Bool { if case .rest = self { true } else { false } }
    }

    package let segments: [Segment]
    /// The pattern as written, e.g. `/feeds/{feed}`.
    public let description: String

    /// A pattern from its text: `/feeds/{feed}/events`, `/{path...}`.
    public init(_ text: String) {
        description = text
        segments = text.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { part in
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return .literal(String(part)) }
            let name = part.dropFirst().dropLast()
            return name.hasSuffix("...") ? .rest(String(name.dropLast(3))) : .parameter(String(name))
        }
    }

    /// The parameters if `path` (decoded segments, after the leading `/`) has this pattern's shape.
    /// - Complexity: O(number of segments).
    package func match(_ path: [String]) -> RouteParameters? {
        guard path.count == segments.count || segments.last?.isRest == true else { return nil }
        var parameters = RouteParameters()
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .rest(let name):
                parameters.append(name, path[min(index, path.count)...].joined(separator: "/"))
                return parameters
            case .literal(let text):
                guard index < path.count, path[index] == text else { return nil }
            case .parameter(let name):
                guard index < path.count else { return nil }
                parameters.append(name, path[index])
            }
        }
        return path.count == segments.count ? parameters : nil
    }
}

/// The values of a matched pattern's parameters, by name: a pattern has two at most, so a list
/// searched in order (no hashing per request).
package struct RouteParameters: Sendable {
    private var pairs: [(name: String, value: String)] = []

    package init(_ pairs: [(name: String, value: String)] = []) {
        self.pairs = pairs
    }

    package mutating func append(_ name: String, _ value: String) {
        pairs.append((name, value))
    }

    /// The value of a parameter of the pattern, nil for a name the pattern lacks.
    package func value(_ name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    /// The value of a parameter of the pattern (the empty string for a name the pattern lacks).
    package subscript(name: String) -> String { value(name) ?? "" }
}

/// One row of ``FeedAPI``'s route table: a method, a path pattern and the handler that answers it,
/// with the condition under which the row applies to a matched path.
///
/// The `Allow` header of a `405` lists the methods of the rows that apply to the path (and `HEAD`
/// after `GET`); `OPTIONS` lists every method of the table.
public struct Route: Sendable {
    /// When a row applies to a matched path: some depend on what the `{feed}` is.
    package enum Condition: Sendable {
        case always
        /// `{feed}` is not hosted: a feed of snapshots written with `PUT`.
        case snapshotFeed
        /// `{feed}` is hosted by a view model.
        case viewModelFeed
        /// `{feed}` is hosted by a view model that takes `PATCH`.
        case patchable
        /// `{feed}` is hosted by a view model that has the action `{action}`.
        case action
    }

    /// The handlers of the table.
    package enum Handler: Sendable {
        case health, ready, metrics, listFeeds
        case getFeed, putFeed, deleteFeed, patchFeed
        /// `PUT` or `DELETE` of a view model's feed: `409`, it is changed through the view model.
        case refuseViewModelWrite
        case subscribe, performAction, staticFile
        /// `GET /events?feed=…`: many feeds on one event stream.
        case subscribeMany
        /// `GET /feeds/{feed}/log`: reads by position, for HTTP caches.
        case readLog
    }

    /// The method, e.g. `GET`. `HEAD` is answered by the `GET` row.
    public let method: String
    /// The path pattern, e.g. `/feeds/{feed}`.
    public let pattern: RoutePattern
    package let condition: Condition
    /// Whether `Allow` lists it; false for a row that only explains a refusal.
    package let isListed: Bool
    package let handler: Handler

    package init(_ method: String, _ pattern: RoutePattern, when condition: Condition = .always, listed: Bool = true, _ handler: Handler) {
        self.method = method
        self.pattern = pattern
        self.condition = condition
        self.isListed = listed
        self.handler = handler
    }
}
