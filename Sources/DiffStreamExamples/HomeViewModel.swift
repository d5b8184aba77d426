import DiffStream
import DiffStreamJSON
import FeedCore
import ViewModelHosting

/// The home feed of the classic diffable-data-source example: an optional banner, suggested media and
/// recommended media with a header. Sections appear only when they have content. It takes `PATCH`
/// with any subset of its state.
public struct HomeViewModel: HostedViewModel {
    public struct Banner: Codable, Sendable, Equatable {
        public var id: String
        public var title: String
        public var subtitle: String?
    }

    public struct Media: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable { case image, video }
        public var id: String
        public var type: Kind
        public var title: String
        public var url: String
    }

    public struct Header: Codable, Sendable, Equatable {
        public var title: String
        public var isFeatured: Bool
    }

    public struct State: Codable, Sendable, Equatable {
        public var banner: Banner?
        public var suggested: [Media]
        public var recommended: [Media]
        public var recommendedHeader: Header
    }

    public init() {}

    public var initialState: State { Self.sample }
    public var acceptsPatch: Bool { true }

    // MARK: Rendering

    public enum SectionID: String, Hashable, Sendable { case banner, suggested, recommended }

    public struct HomeSection: Identifiable, Equatable, WireSectionConvertible {
        public var id: SectionID
        var model: JSONValue = .null
        public var wireSection: WireSection { WireSection(id: id.rawValue, model: model) }
    }

    public enum HomeItem: Identifiable, Equatable, WireItemConvertible {
        case banner(Banner)
        case suggested(Media)
        case recommended(Media)

        /// The same media may be in both lists: its identity includes the section.
        public var id: String {
            switch self {
            case .banner(let banner): "banner-\(banner.id)"
            case .suggested(let media): "suggested-\(media.id)"
            case .recommended(let media): "recommended-\(media.id)"
            }
        }

        public var wireItem: WireItem {
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
    public func render(_ state: State) throws -> Snapshot<HomeSection, HomeItem> {
        try Snapshot {
            if let banner = state.banner {
                Section(HomeSection(id: .banner)) { HomeItem.banner(banner) }
            }
            if !state.suggested.isEmpty {
                Section(HomeSection(id: .suggested, model: ["title": "Suggested"])) {
                    for media in state.suggested { HomeItem.suggested(media) }
                }
            }
            if !state.recommended.isEmpty {
                Section(HomeSection(id: .recommended, model: ["title": .string(state.recommendedHeader.title), "isFeatured": .bool(state.recommendedHeader.isFeatured)])) {
                    for media in state.recommended { HomeItem.recommended(media) }
                }
            }
        }
    }

    // MARK: PATCH

    /// The rules a patched state must follow beyond its types: ids of 1 to 200 bytes, no media twice
    /// in one list, a header title.
    public func validate(_ state: State) throws {
        if let banner = state.banner { try Self.checkID(banner.id, field: "banner.id") }
        for (name, list) in [("suggested", state.suggested), ("recommended", state.recommended)] {
            var seen = Set<WireID>()  // media ids become item ids: compared by code points
            for (index, media) in list.enumerated() {
                try Self.checkID(media.id, field: "\(name)[\(index)].id")
                guard seen.insert(WireID(media.id)).inserted else { throw InvalidInput(field: "\(name)[\(index)].id", "duplicate media id '\(media.id)' in \(name)") }
            }
        }
        if state.recommendedHeader.title.isEmpty { throw InvalidInput(field: "recommendedHeader.title", "expected a non-empty string") }
    }

    static func checkID(_ id: String, field: String) throws {
        if id.isEmpty || id.utf8.count > 200 { throw InvalidInput(field: field, "expected 1 to 200 bytes") }
    }

    // MARK: The demo

    /// One step of the home demo: banner on and off, inserts, removes, moves across sections, title
    /// updates and the header star, in a cycle.
    public static func demoStep(_ step: Int, _ state: inout State) {
        let pool: [Media] = [
            .init(id: "m8", type: .image, title: "Coral reef", url: "/media/m8.jpg"),
            .init(id: "m9", type: .video, title: "Rainy street", url: "/media/m9.mp4"),
            .init(id: "m10", type: .image, title: "Lavender field", url: "/media/m10.jpg"),
        ]
        switch step % 8 {
        case 0:
            state.banner = state.banner == nil ? sample.banner : nil
        case 1:
            if let extra = pool.first(where: { media in !state.suggested.contains { $0.id == media.id } }) {
                state.suggested.insert(extra, at: min(1, state.suggested.count))
            }
        case 2:
            if state.recommended.count > 1 { state.recommended.append(state.recommended.removeFirst()) }
        case 3:
            if let moved = state.suggested.last, !state.recommended.contains(where: { $0.id == moved.id }) {
                state.suggested.removeLast()
                state.recommended.insert(moved, at: 0)
            }
        case 4:
            if !state.suggested.isEmpty {
                let index = step % state.suggested.count
                let base = state.suggested[index].title.split(separator: " · ").first.map(String.init) ?? ""
                state.suggested[index].title = "\(base) · \(step)"
            }
        case 5:
            state.recommendedHeader.isFeatured.toggle()
        case 6:
            if let moved = state.recommended.first, !state.suggested.contains(where: { $0.id == moved.id }), state.recommended.count > 2 {
                state.recommended.removeFirst()
                state.suggested.append(moved)
            }
        default:
            if state.suggested.count > 3 { state.suggested.remove(at: 1) }
        }
    }

    // MARK: Sample data

    public static let sample = State(
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
