import DiffStream
import DiffStreamJSON

/// The home feed of the classic diffable-data-source example: an optional banner, suggested media and
/// recommended media with a header. Sections appear only when they have content.
public struct HomeViewModel: Sendable, Equatable {
    public struct Banner: Sendable, Equatable {
        public var id: String
        public var title: String
        public var subtitle: String?
    }

    public struct Media: Sendable, Equatable {
        public enum Kind: String, Sendable { case image, video }
        public var id: String
        public var type: Kind
        public var title: String
        public var url: String
    }

    public struct Header: Sendable, Equatable {
        public var title: String
        public var isFeatured: Bool
    }

    public var banner: Banner?
    public var suggested: [Media]
    public var recommended: [Media]
    public var recommendedHeader: Header

    // MARK: Rendering

    enum SectionID: String, Hashable, Sendable { case banner, suggested, recommended }

    struct HomeSection: Identifiable, Equatable, WireSectionConvertible {
        var id: SectionID
        var model: JSONValue = .null
        var wireSection: WireSection { WireSection(id: id.rawValue, model: model) }
    }

    enum HomeItem: Identifiable, Equatable, WireItemConvertible {
        case banner(Banner)
        case suggested(Media)
        case recommended(Media)

        /// The same media may be in both lists: its identity includes the section.
        var id: String {
            switch self {
            case .banner(let banner): "banner-\(banner.id)"
            case .suggested(let media): "suggested-\(media.id)"
            case .recommended(let media): "recommended-\(media.id)"
            }
        }

        var wireItem: WireItem {
            switch self {
            case .banner(let banner):
                var model: JSONValue = ["title": .string(banner.title)]
                if let subtitle = banner.subtitle, case .object(var object) = model {
                    object["subtitle"] = .string(subtitle)
                    model = .object(object)
                }
                return WireItem(id: id, kind: "banner", model: model)
            case .suggested(let media), .recommended(let media):
                return WireItem(id: id, kind: media.type.rawValue, model: ["id": .string(media.id), "title": .string(media.title), "url": .string(media.url)])
            }
        }
    }

    /// The snapshot, written with the DSL.
    public func render() throws -> WireSnapshot {
        try Snapshot<HomeSection, HomeItem> {
            if let banner {
                Section(HomeSection(id: .banner)) { HomeItem.banner(banner) }
            }
            if !suggested.isEmpty {
                Section(HomeSection(id: .suggested, model: ["title": "Suggested"])) {
                    for media in suggested { HomeItem.suggested(media) }
                }
            }
            if !recommended.isEmpty {
                Section(HomeSection(id: .recommended, model: ["title": .string(recommendedHeader.title), "isFeatured": .bool(recommendedHeader.isFeatured)])) {
                    for media in recommended { HomeItem.recommended(media) }
                }
            }
        }.wireSnapshot()
    }

    // MARK: PATCH

    /// Applies a JSON object holding any subset of the state, like setting published properties.
    /// Unknown or malformed fields are an error naming the field; nothing changes then.
    public mutating func apply(patch: JSONValue) throws(APIError) {
        guard case .object(let object) = patch else { throw APIError(.unprocessableContent, "invalid body", "the body must be a JSON object") }
        var next = self
        for (key, value) in object {
            switch key {
            case "banner":
                next.banner = value.isNull ? nil : try Self.banner(value, field: "banner")
            case "suggested":
                next.suggested = try Self.mediaList(value, field: "suggested")
            case "recommended":
                next.recommended = try Self.mediaList(value, field: "recommended")
            case "recommendedHeader":
                guard case .object(let header) = value else { throw .invalidField(key, "expected an object") }
                for headerKey in header.keys where headerKey != "title" && headerKey != "isFeatured" {
                    throw .invalidField("recommendedHeader.\(headerKey)", "unknown field")
                }
                if let title = header["title"] {
                    guard let text = title.stringValue, !text.isEmpty else { throw .invalidField("recommendedHeader.title", "expected a non-empty string") }
                    next.recommendedHeader.title = text
                }
                if let featured = header["isFeatured"] {
                    guard let flag = featured.boolValue else { throw .invalidField("recommendedHeader.isFeatured", "expected true or false") }
                    next.recommendedHeader.isFeatured = flag
                }
            default:
                throw .invalidField(key, "unknown field (expected banner, suggested, recommended or recommendedHeader)")
            }
        }
        self = next
    }

    static func banner(_ value: JSONValue, field: String) throws(APIError) -> Banner {
        guard case .object(let object) = value else { throw .invalidField(field, "expected an object or null") }
        for key in object.keys where !["id", "title", "subtitle"].contains(key) { throw .invalidField("\(field).\(key)", "unknown field") }
        let id = try string(object["id"], field: "\(field).id", idLike: true)
        let title = try string(object["title"], field: "\(field).title")
        var subtitle: String?
        if let value = object["subtitle"], !value.isNull { subtitle = try string(value, field: "\(field).subtitle") }
        return Banner(id: id, title: title, subtitle: subtitle)
    }

    static func mediaList(_ value: JSONValue, field: String) throws(APIError) -> [Media] {
        guard case .array(let elements) = value else { throw .invalidField(field, "expected an array of media") }
        var seen = Set<String>()
        var list: [Media] = []
        for (index, element) in elements.enumerated() {
            let path = "\(field)[\(index)]"
            guard case .object(let object) = element else { throw .invalidField(path, "expected an object") }
            for key in object.keys where !["id", "type", "title", "url"].contains(key) { throw .invalidField("\(path).\(key)", "unknown field") }
            let id = try string(object["id"], field: "\(path).id", idLike: true)
            guard seen.insert(id).inserted else { throw .invalidField("\(path).id", "duplicate media id '\(id)' in \(field)") }
            guard let typeName = object["type"]?.stringValue, let type = Media.Kind(rawValue: typeName) else {
                throw .invalidField("\(path).type", "expected \"image\" or \"video\"")
            }
            list.append(Media(id: id, type: type, title: try string(object["title"], field: "\(path).title"), url: try string(object["url"], field: "\(path).url")))
        }
        return list
    }

    static func string(_ value: JSONValue?, field: String, idLike: Bool = false) throws(APIError) -> String {
        guard let text = value?.stringValue else { throw .invalidField(field, "expected a string") }
        if idLike && (text.isEmpty || text.utf8.count > 200) { throw .invalidField(field, "expected 1 to 200 bytes") }
        return text
    }

    // MARK: Sample data

    public static let sample = HomeViewModel(
        banner: Banner(id: "welcome", title: "Welcome to DiffStream", subtitle: "Every change is one batch of operations"),
        suggested: [
            Media(id: "m1", type: .image, title: "Northern lights", url: "/media/m1.jpg"),
            Media(id: "m2", type: .video, title: "Ocean waves", url: "/media/m2.mp4"),
            Media(id: "m3", type: .image, title: "Desert dunes", url: "/media/m3.jpg"),
            Media(id: "m4", type: .image, title: "City at night", url: "/media/m4.jpg"),
        ],
        recommended: [
            Media(id: "m5", type: .video, title: "Mountain trail", url: "/media/m5.mp4"),
            Media(id: "m2", type: .video, title: "Ocean waves", url: "/media/m2.mp4"),
            Media(id: "m6", type: .image, title: "Autumn forest", url: "/media/m6.jpg"),
            Media(id: "m7", type: .image, title: "Snowy peaks", url: "/media/m7.jpg"),
        ],
        recommendedHeader: Header(title: "Recommended for you", isFeatured: false))
}
