import DiffStream
import DiffStreamJSON
@testable import FeedServer
import Testing

struct HomeViewModelTests {
    @Test func sectionsAppearOnlyWithContent() throws {
        var model = HomeViewModel.sample
        #expect(try model.render().sectionIDs == ["banner", "suggested", "recommended"])
        model.banner = nil
        model.suggested = []
        #expect(try model.render().sectionIDs == ["recommended"])
        model.recommended = []
        #expect(try model.render().numberOfSections == 0)
    }

    @Test func theSameMediaInBothListsIsNotADuplicate() throws {
        let snapshot = try HomeViewModel.sample.render()
        #expect(snapshot.contains(item: "suggested-m2"))
        #expect(snapshot.contains(item: "recommended-m2"))
    }

    @Test func patchSetsOnlyTheGivenFields() throws {
        var model = HomeViewModel.sample
        try model.apply(patch: try JSONParser.parse(#"{"banner":null,"recommendedHeader":{"isFeatured":true}}"#))
        #expect(model.banner == nil)
        #expect(model.recommendedHeader.isFeatured)
        #expect(model.recommendedHeader.title == HomeViewModel.sample.recommendedHeader.title)
        #expect(model.suggested == HomeViewModel.sample.suggested)
        let snapshot = try model.render()
        #expect(snapshot.section(withID: "recommended")?.model["isFeatured"] == .bool(true))
    }

    @Test(arguments: [
        (#"{"nope":1}"#, "nope"),
        (#"{"suggested":{}}"#, "suggested"),
        (#"{"suggested":[{"id":"a","type":"gif","title":"t","url":"u"}]}"#, "suggested[0].type"),
        (#"{"recommended":[{"id":"a","type":"image","title":"t","url":"u"},{"id":"a","type":"image","title":"t","url":"u"}]}"#, "recommended[1].id"),
        (#"{"banner":{"id":"b"}}"#, "banner.title"),
        (#"{"recommendedHeader":{"isFeatured":"yes"}}"#, "recommendedHeader.isFeatured"),
        (#"[1]"#, "object"),
    ])
    func badPatchesNameTheFieldAndChangeNothing(body: String, field: String) throws {
        var model = HomeViewModel.sample
        #expect {
            try model.apply(patch: try JSONParser.parse(body))
        } throws: { error in
            (error as? APIError)?.detail.contains(field) == true && (error as? APIError)?.status.code == 422
        }
        #expect(model == HomeViewModel.sample)
    }

    @Test func aPatchBecomesOneMinimalBatch() throws {
        var model = HomeViewModel.sample
        let before = try model.render()
        var recommended = model.recommended
        recommended.append(recommended.removeFirst())  // one move
        try model.apply(patch: .object(JSONObject([("recommended", .array(recommended.map { media in
            ["id": .string(media.id), "type": .string(media.type.rawValue), "title": .string(media.title), "url": .string(media.url)]
        }))])))
        let batch = WireSnapshot.diff(from: before, to: try model.render())
        #expect(batch.counts == OperationCounts([.move: 1]))
    }
}

struct BlackjackViewModelTests {
    @Test func eachDealAppendsOneCardUntilTheHandEnds() throws {
        var generator = SystemRandomNumberGenerator()
        var model = BlackjackViewModel()
        model.deal(using: &generator)
        var previous = try model.render()
        for _ in 0..<40 {
            let hadEnded = model.score >= 21
            model.deal(using: &generator)
            let next = try model.render()
            let counts = WireSnapshot.diff(from: previous, to: next).counts
            if hadEnded {
                #expect(model.hand.count == 1)
                #expect(model.deck.count == 51)
            } else {
                #expect(counts[.insert] == 1)
                #expect(counts[.delete] == 0)
                #expect(counts[.updateSection] == 1)
            }
            previous = next
        }
    }

    @Test func acesCountOneWhenElevenWouldBust() {
        #expect(BlackjackViewModel.Card(deck: 1, rank: "A", suit: "♠").value == 11)
        #expect(BlackjackViewModel.Card(deck: 1, rank: "K", suit: "♠").value == 10)
    }

    @Test func twoCardsOfTheSameRankAreDistinctItems() {
        let a = BlackjackViewModel.Card(deck: 1, rank: "7", suit: "♠")
        let b = BlackjackViewModel.Card(deck: 1, rank: "7", suit: "♥")
        let c = BlackjackViewModel.Card(deck: 2, rank: "7", suit: "♠")
        #expect(Set([a.id, b.id, c.id]).count == 3)
    }
}

struct ForecastViewModelTests {
    @Test(arguments: ["d-tue", "d-wed", "d-thu", "d-fri"])
    func selectingADayUpdatesOnlyTheHoursThatDiffer(day: String) throws {
        var model = ForecastViewModel.sample
        let before = try model.render()
        try model.select(day: day)
        let after = try model.render()
        let batch = WireSnapshot.diff(from: before, to: after)
        let updatedHours = Set(batch.operations.compactMap { operation -> String? in
            if case .update(let item) = operation, item.kind == "hour" { return item.id }
            return nil
        })
        let differing = Set(after.items(inSection: "hourly")!.filter { $0 != before.item(withID: $0.id) }.map(\.id))
        #expect(updatedHours == differing)
        #expect(!differing.isEmpty)
        #expect(differing.count < after.numberOfItems(inSection: "hourly")!)
        #expect(batch.counts[.update] == differing.count + 2)  // plus the two daily items' `selected`
        #expect(batch.counts[.move] == 0 && batch.counts[.insert] == 0 && batch.counts[.delete] == 0)
    }

    @Test func unknownDayIsAnError() {
        var model = ForecastViewModel.sample
        #expect(throws: APIError.self) { try model.select(day: "d-xyz") }
        #expect(model == ForecastViewModel.sample)
    }
}

struct WeekViewModelTests {
    @Test func onlyChangedDaysAreUpdated() throws {
        var generator = SystemRandomNumberGenerator()
        var model = WeekViewModel.sample
        for _ in 0..<50 {
            let before = try model.render()
            model.simulate(using: &generator)
            let after = try model.render()
            let batch = WireSnapshot.diff(from: before, to: after)
            let changed = after.items.filter { $0 != before.item(withID: $0.id) }.count
            #expect(batch.counts == OperationCounts(changed == 0 ? [:] : [.update: changed]))
        }
    }
}
