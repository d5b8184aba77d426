import DiffStream
import Testing

enum HomeSection: Hashable, Identifiable {
    case banner, suggested, recommended
    var id: Self { self }
}

enum HomeItem: Hashable, Identifiable {
    case banner(String)
    case suggested(Int)
    case recommended(Int)
    var id: Self { self }
}

struct SnapshotBuilderTests {
    func render(banner: String?, suggested: [Int], recommended: [Int], featured: Bool) throws -> Snapshot<HomeSection, HomeItem> {
        try Snapshot {
            if let banner { Section(HomeSection.banner) { HomeItem.banner(banner) } }
            if !suggested.isEmpty {
                Section(HomeSection.suggested) { for id in suggested { HomeItem.suggested(id) } }
            }
            if featured {
                Section(HomeSection.recommended) { recommended.map(HomeItem.recommended) }
            } else {
                Section(HomeSection.recommended, items: recommended.reversed().map(HomeItem.recommended))
            }
        }
    }

    @Test func ifLetForAndIfElseBuildTheExpectedSnapshot() throws {
        let snapshot = try render(banner: "hello", suggested: [1, 2], recommended: [1, 3], featured: true)
        #expect(snapshot.description == "banner: banner(\"hello\")\nsuggested: suggested(1) suggested(2)\nrecommended: recommended(1) recommended(3)")
    }

    @Test func optionalAndEmptySectionsAreLeftOutOrKeptEmpty() throws {
        let snapshot = try render(banner: nil, suggested: [], recommended: [], featured: false)
        #expect(snapshot.sectionIDs == [.recommended])
        #expect(snapshot.numberOfItems == 0)
        #expect(snapshot.description == "recommended:")
    }

    @Test(arguments: [0, 1, 2])
    func switchChoosesSections(choice: Int) throws {
        let snapshot = try Snapshot<HomeSection, HomeItem> {
            switch choice {
            case 0: Section(HomeSection.banner) { HomeItem.banner("zero") }
            case 1: Section(HomeSection.suggested) { HomeItem.suggested(1); HomeItem.suggested(2) }
            default: Section(HomeSection.recommended)
            }
        }
        #expect(snapshot.numberOfSections == 1)
        #expect(snapshot.numberOfItems == [1, 2, 0][choice])
    }

    @Test func optionalItemsAreSkippedWhenNil() throws {
        let maybe: HomeItem? = nil
        let snapshot = try Snapshot<HomeSection, HomeItem> {
            Section(HomeSection.suggested) {
                maybe
                HomeItem.suggested(1)
            }
        }
        #expect(snapshot.itemIDs == [.suggested(1)])
    }

    @Test func duplicatesInTheDSLThrow() {
        #expect(throws: SnapshotError.self) {
            _ = try Snapshot<HomeSection, HomeItem> {
                Section(HomeSection.suggested) { HomeItem.suggested(1); HomeItem.suggested(1) }
            }
        }
    }
}
