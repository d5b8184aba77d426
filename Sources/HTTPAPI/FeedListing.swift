import FeedCore
import ViewModelHosting
import DiffStreamJSON
import HTTPCore

/// One entry of `GET /feeds`: `{"feed":"todo","version":3,"kind":"viewModel","patch":false,"actions":[…]}`,
/// `{"feed":"news","version":2,"kind":"snapshot"}`, or a family of feeds once, whatever its members:
/// `{"feed":"home.*","kind":"family","family":"home","live":2,"patch":true,"actions":[…]}` (members are
/// `home.KEY`; `live` counts the members made now).
package struct FeedListing: Encodable {
    package var feed: String
    package var version: Int?
    package var kind: String
    package var family: String?
    package var live: Int?
    package var patch: Bool?
    package var actions: [ActionListing]?
    /// The name of the feed's presence feed, when it has presence (issue 55).
    package var presence: String?

    package init(feed: String, version: Int?, kind: String, family: String? = nil, live: Int? = nil, patch: Bool? = nil, actions: [ActionListing]? = nil, presence: String? = nil) {
        self.feed = feed
        self.version = version
        self.kind = kind
        self.family = family
        self.live = live
        self.patch = patch
        self.actions = actions
        self.presence = presence
    }
}

/// An action as `GET /feeds` lists it:
/// `{"name":"add","public":true,"fields":[{"name":"title","type":"string","optional":false,"nullable":false}]}`.
package struct ActionListing: Encodable {
    package struct Field: Encodable {
        var name: String
        var type: String
        /// For a field of type `item`: the kind of item it names.
        var itemKind: String?
        var optional: Bool
        var nullable: Bool
    }

    package var name: String
    package var isPublic: Bool
    package var fields: [Field]

    package enum CodingKeys: String, CodingKey {
        case name, isPublic = "public", fields
    }

    package init(_ action: ActionDescription) {
        name = action.name
        isPublic = action.isPublic
        fields = action.fields.map { field in
            let (type, itemKind): (String, String?) = switch field.type {
            case .string: ("string", nil)
            case .integer: ("integer", nil)
            case .number: ("number", nil)
            case .boolean: ("boolean", nil)
            case .item(let kind): ("item", kind)
            }
            return Field(name: field.name, type: type, itemKind: itemKind, optional: field.isOptional, nullable: field.isNullable)
        }
    }
}
