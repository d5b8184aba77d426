import DiffStream
import DiffStreamJSON
import Foundation
import Testing
@testable import DiffStreamClient

/// The home feed's heterogeneous items as one enum, decoded from `{"id","kind","model"}`.
enum HomeItem: Identifiable, Hashable, Decodable, Sendable {
    case banner(id: String, title: String)
    case media(id: String, kind: String, title: String)

    var id: String {
        switch self { case .banner(let id, _), .media(let id, _, _): id }
    }

    private enum Keys: String, CodingKey { case id, kind, model }
    private struct Model: Decodable { var title: String }

    init(from decoder: any Decoder) throws {
        let wire = try decoder.container(keyedBy: Keys.self)
        let id = try wire.decode(String.self, forKey: .id)
        let kind = try wire.decode(String.self, forKey: .kind)
        let model = try wire.decode(Model.self, forKey: .model)
        switch kind {
        case "banner": self = .banner(id: id, title: model.title)
        case "image", "video": self = .media(id: id, kind: kind, title: model.title)
        default: throw DecodingError.dataCorruptedError(forKey: .kind, in: wire, debugDescription: "unknown kind \(kind)")
        }
    }
}

struct HomeSection: Identifiable, Hashable, Decodable, Sendable {
    var id: String
    var model: Header?
    struct Header: Hashable, Decodable, Sendable { var title: String }
}

struct TypedFeedDecoderTests {
    static func wire(_ json: String) throws -> WireSnapshot { try WireCodec.decodeSnapshot(Array(json.utf8)) }

    static func update(_ snapshot: WireSnapshot, change: UpdateChange, version: Int) -> WireFeedUpdate {
        WireFeedUpdate(feed: "home", snapshot: snapshot, version: version, history: "h", eventID: "ds1.h.\(version)", change: change)
    }

    @Test func heterogeneousItemsAndUndecodableOnesReportedWithTheirIds() throws {
        let snapshot = try Self.wire("""
        {"sections":[{"id":"banner","model":null,"items":[{"id":"banner-1","kind":"banner","model":{"title":"Hi"}}]},
         {"id":"suggested","model":{"title":"Suggested"},"items":[
           {"id":"suggested-m1","kind":"image","model":{"title":"A"}},
           {"id":"suggested-m2","kind":"hologram","model":{"title":"B"}},
           {"id":"suggested-m3","kind":"video","model":{"name":"no title"}},
           {"id":"suggested-m4","kind":"video","model":{"title":"D"}}]}]}
        """)
        var decoder = TypedFeedDecoder<HomeSection, HomeItem>()
        let typed = decoder.decode(Self.update(snapshot, change: .full(.first), version: 1))
        #expect(typed.snapshot.sectionIDs == ["banner", "suggested"])
        #expect(typed.snapshot.section(withID: "banner")?.model == nil)
        #expect(typed.snapshot.section(withID: "suggested")?.model?.title == "Suggested")
        #expect(typed.snapshot.itemIDs == ["banner-1", "suggested-m1", "suggested-m4"])
        #expect(typed.snapshot.item(withID: "banner-1") == .banner(id: "banner-1", title: "Hi"))
        #expect(typed.snapshot.item(withID: "suggested-m4") == .media(id: "suggested-m4", kind: "video", title: "D"))
        #expect(typed.undecodable.map(\.id) == ["suggested-m2", "suggested-m3"])
        #expect(typed.undecodable.map(\.kind) == ["hologram", "video"])
        #expect(typed.undecodable[0].reason.contains("unknown kind hologram"))
        #expect(typed.undecodable[1].reason.contains("title"))
    }

    @Test func batchGivesTypedOperationsAndChangedIds() throws {
        var decoder = TypedFeedDecoder<HomeSection, HomeItem>()
        let before = try Self.wire(#"{"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"image","model":{"title":"A"}},{"id":"b","kind":"image","model":{"title":"B"}}]}]}"#)
        let after = try Self.wire(#"{"sections":[{"id":"s","model":null,"items":[{"id":"b","kind":"image","model":{"title":"B2"}},{"id":"a","kind":"image","model":{"title":"A"}},{"id":"c","kind":"nope","model":{"title":"C"}}]}]}"#)
        _ = decoder.decode(Self.update(before, change: .full(.first), version: 1))
        let typed = decoder.decode(Self.update(after, change: .batch, version: 2))
        #expect(typed.change == .batch)
        #expect(typed.changedItemIDs == ["b"])
        #expect(typed.undecodable.map(\.id) == ["c"])
        // The operations bring the previous typed snapshot to this one.
        var replay = try Snapshot<HomeSection, HomeItem> {
            Section(HomeSection(id: "s")) {
                HomeItem.media(id: "a", kind: "image", title: "A")
                HomeItem.media(id: "b", kind: "image", title: "B")
            }
        }
        try replay.apply(Batch(typed.operations))
        #expect(replay == typed.snapshot)
        // An element that failed once is not reported again while unchanged.
        let again = decoder.decode(Self.update(after, change: .batch, version: 3))
        #expect(again.undecodable.isEmpty)
        #expect(again.operations.isEmpty)
    }
}
