// docs/client-swift.md, "Following a feed", verbatim:
import DiffStreamClient   // also imports DiffStream (Snapshot, Operation) and DiffStreamJSON (WireItem, JSONModel)
import Foundation         // URL

let client = FeedClient(baseURL: URL(string: "https://example.com")!, token: token)
for try await event in client.snapshots(of: "week", as: Snapshot<WeekSection, Day>.self) {
    switch event {
    case .update(let update): show(update)
    case .deleted, .notFound: showPlaceholder()              // retried with backoff
    case .unauthorized(let problem), .forbidden(let problem): signIn(problem.detail)
    case .unavailable(_, let detail): markStale(detail)       // keep showing the last update
    case .available: clearStaleMark()                         // what was missed follows as updates
    case .serverError, .resyncing, .connection: break         // for a status line
    }
}

// docs/client-swift.md, "Decoding: the app's own types", verbatim:
struct HomeSection: Identifiable, Hashable, Decodable, Sendable {
    var id: String
    var model: Header?                 // null for the banner section
    struct Header: Hashable, Decodable, Sendable { var title: String; var isFeatured: Bool? }
}

enum HomeItem: Identifiable, Hashable, Decodable, Sendable {
    case banner(id: String, title: String, subtitle: String?)
    case media(id: String, kind: String, title: String, url: URL)

    var id: String {
        switch self { case .banner(let id, _, _), .media(let id, _, _, _): id }
    }

    private enum Keys: String, CodingKey { case id, kind, model }
    private struct Banner: Decodable { var title: String; var subtitle: String? }
    private struct Media: Decodable { var title: String; var url: URL }

    init(from decoder: any Decoder) throws {
        let wire = try decoder.container(keyedBy: Keys.self)
        let id = try wire.decode(String.self, forKey: .id)
        switch try wire.decode(String.self, forKey: .kind) {
        case "banner":
            let banner = try wire.decode(Banner.self, forKey: .model)
            self = .banner(id: id, title: banner.title, subtitle: banner.subtitle)
        case let kind where kind == "image" || kind == "video":
            let media = try wire.decode(Media.self, forKey: .model)
            self = .media(id: id, kind: kind, title: media.title, url: media.url)
        case let kind:
            throw DecodingError.dataCorruptedError(forKey: .kind, in: wire, debugDescription: "unknown kind \(kind)")
        }
    }
}

for try await event in client.snapshots(of: "home", as: Snapshot<HomeSection, HomeItem>.self) {
    if case .update(let update) = event { show(update.snapshot, undecodable: update.undecodable) }
}

// docs/client-swift.md, "Many feeds on one stream", verbatim:
for try await event in client.snapshots(of: ["inbox", "lobby"], as: Snapshot<Room, Message>.self) {
    if case .update(let update) = event { show(update.snapshot, in: update.feed) }   // each update names its feed
}
for try await event in client.updates(of: ["home", "week"]) { record(event) }   // feeds of different types: untyped

// docs/client-swift.md, "Behind a CDN: `delivery = .cacheableLog`", verbatim:
var cdnClient = FeedClient(baseURL: URL(string: "https://cdn.example.com")!)
cdnClient.delivery = .cacheableLog   // each feed through GET /feeds/{feed}/log instead of the event stream
for try await event in cdnClient.snapshots(of: "lobby", as: Snapshot<Room, Message>.self) {
    if case .update(let update) = event { show(update.snapshot, in: update.feed) }
}

// docs/client-swift.md, "Actions", verbatim:
struct Toggle: Encodable, Sendable { var id: String }
try await client.perform("toggle", on: "todo", input: Toggle(id: "t3"))   // ActionResult(feed, version, ops)
