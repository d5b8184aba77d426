// Support: what README.md's snippets in main.swift take for granted (the app's own types and values).
import DiffStream
import DiffStreamClient
import Foundation

struct Banner: Equatable, Sendable { var id: String; var title: String }
struct Media: Equatable, Sendable { var id: String; var title: String }

enum HomeSection: Hashable, Identifiable, Sendable {
    case banner, suggested
    var id: Self { self }
}

enum HomeItem: Equatable, Identifiable, Sendable {
    case banner(Banner), suggested(Media)
    var id: String {
        switch self {
        case .banner(let banner): "banner-\(banner.id)"
        case .suggested(let media): "suggested-\(media.id)"
        }
    }
}

@MainActor let old = Home(banner: nil, suggested: [Media(id: "m1", title: "Northern lights")])
@MainActor let new = Home(banner: Banner(id: "b1", title: "Hello"), suggested: [])
@MainActor var snapshot = Snapshot<HomeSection, HomeItem>()

struct WeekSection: Identifiable, Hashable, Decodable, Sendable { var id: String }
struct Day: Identifiable, Hashable, Decodable, Sendable { var id: String }
struct Toggle: Encodable, Sendable { var id: String }

func show(_ snapshot: Snapshot<WeekSection, Day>, reconfiguring changed: [String]) {}
