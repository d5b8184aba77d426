import DiffStream
import DiffStreamJSON
import DiffStreamTesting
import DiffStreamExamples
import FeedServer
import Testing

/// The wire form of a view model's render.
func wire<Model: HostedViewModel>(_ model: Model, _ state: Model.State) throws -> WireSnapshot {
    try model.render(state).wireSnapshot()
}

/// Whether `error` is a view model refusing its input: a field or a body of the wrong shape (what
/// the API answers `422`), as opposed to a failure of the server.
func isRefusal(_ error: any Error) -> Bool {
    switch error as? ViewModelError {
    case .invalidField?, .invalidBody?, .changeRefused?: true
    default: false
    }
}

struct HomeViewModelTests {
    let model = HomeViewModel()

    @Test func sectionsAppearOnlyWithContent() throws {
        var state = HomeViewModel.sample
        #expect(try wire(model, state).sectionIDs == ["banner", "suggested", "recommended"])
        state.banner = nil
        state.suggested = []
        #expect(try wire(model, state).sectionIDs == ["recommended"])
        state.recommended = []
        #expect(try wire(model, state).numberOfSections == 0)
    }

    @Test func theSameMediaInBothListsIsNotADuplicate() throws {
        let snapshot = try wire(model, HomeViewModel.sample)
        #expect(snapshot.contains(item: "suggested-m2"))
        #expect(snapshot.contains(item: "recommended-m2"))
    }

    @Test func patchSetsOnlyTheGivenFields() async throws {
        let home = try await ViewModelHarness(model, as: "home")
        let step = try await home.patch(json: #"{"banner":null,"recommendedHeader":{"isFeatured":true}}"#)
        #expect(step.version == 2 && step.batch.operations.count == 2)
        let state = await home.state
        #expect(state.banner == nil)
        #expect(state.recommendedHeader.isFeatured)
        #expect(state.recommendedHeader.title == HomeViewModel.sample.recommendedHeader.title)
        #expect(state.suggested == HomeViewModel.sample.suggested)
        #expect(step.snapshot.section(withID: "recommended")?.model["isFeatured"] == .bool(true))
    }

    @Test(arguments: [
        (#"{"nope":1}"#, "nope"),
        (#"{"suggested":{}}"#, "suggested"),
        (#"{"suggested":[{"id":"a","type":"gif","title":"t","url":"u"}]}"#, "suggested[0].type"),
        (#"{"suggested":[{"id":"a","type":"image","title":"t","url":"u","extra":1}]}"#, "suggested[0].extra"),
        (#"{"recommended":[{"id":"a","type":"image","title":"t","url":"u"},{"id":"a","type":"image","title":"t","url":"u"}]}"#, "recommended[1].id"),
        (#"{"banner":{"id":"b","title":7}}"#, "banner.title"),
        (#"{"banner":{"id":""}}"#, "banner.id"),
        (#"{"recommendedHeader":{"isFeatured":"yes"}}"#, "recommendedHeader.isFeatured"),
        (#"{"recommendedHeader":{"title":""}}"#, "recommendedHeader.title"),
        (#"[1]"#, "object"),
    ])
    func badPatchesNameTheFieldAndChangeNothing(body: String, field: String) async throws {
        let home = try await ViewModelHarness(model, as: "home")
        await #expect {
            try await home.patch(json: body)
        } throws: { error in
            isRefusal(error) && "\(error)".contains(field)
        }
        #expect(await home.state == HomeViewModel.sample)
        #expect(await home.version == 1)
    }

    @Test func aPatchBecomesOneMinimalBatch() async throws {
        let home = try await ViewModelHarness(model, as: "home")
        var recommended = HomeViewModel.sample.recommended
        recommended.append(recommended.removeFirst())  // one move
        let list = recommended.map { #"{"id":"\#($0.id)","type":"\#($0.type.rawValue)","title":"\#($0.title)","url":"\#($0.url)"}"# }
        let step = try await home.patch(json: #"{"recommended":[\#(list.joined(separator: ","))]}"#)
        #expect(step.batch.debugString == "move recommended-m5 to recommended at end")
    }

    @Test func theDemoCycleKeepsAValidState() throws {
        var state = HomeViewModel.sample
        for step in 0..<40 {
            HomeViewModel.demoStep(step, &state)
            try model.validate(state)
            _ = try wire(model, state)
        }
    }
}

struct BlackjackViewModelTests {
    @Test func eachDealAppendsOneCardUntilTheHandEnds() async throws {
        let blackjack = try await ViewModelHarness(BlackjackViewModel())
        for _ in 0..<40 {
            let hadEnded = await blackjack.state.score >= 21
            let step = try await blackjack.perform("deal")
            let counts = step.batch.counts
            let state = await blackjack.state
            if hadEnded {
                #expect(state.hand.count == 1)
                #expect(state.deck.count == 51)
            } else {
                #expect(counts[.insert] == 1)
                #expect(counts[.delete] == 0)
                #expect(counts[.updateSection] == 1)
                #expect(step.batch.operations.count == 2)
            }
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
        let model = ForecastViewModel()
        var state = ForecastViewModel.sample
        let before = try wire(model, state)
        try state.select(day: day)
        let after = try wire(model, state)
        let batch = WireSnapshot.diff(from: before, to: after)
        let updatedHours = Set(batch.operations.compactMap { operation -> WireID? in
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

    @Test(arguments: [(#"{"day":"d-xyz"}"#, "day: unknown day"), (#"{}"#, "day: missing"), (#"{"day":3}"#, "day: expected a string"), (#"{"days":"d-mon"}"#, "days: unknown field")])
    func badSelectionsNameTheFieldAndChangeNothing(body: String, detail: String) async throws {
        let forecast = try await ViewModelHarness(ForecastViewModel())
        await #expect {
            try await forecast.perform("select", json: body)
        } throws: { error in
            isRefusal(error) && "\(error)".hasPrefix(detail)
        }
        #expect(await forecast.state == ForecastViewModel.sample)
        #expect(await forecast.response(toAction: "select", json: body).status == 422)
    }
}

struct WeekViewModelTests {
    @Test func onlyChangedDaysAreUpdated() throws {
        var generator = SystemRandomNumberGenerator()
        let model = WeekViewModel()
        var state = WeekViewModel.sample
        var days = state.days
        for _ in 0..<50 {
            let before = try wire(model, state)
            state.apply(WeatherService.next(&days, using: &generator))
            #expect(state.days == days)
            let after = try wire(model, state)
            let batch = WireSnapshot.diff(from: before, to: after)
            let changed = after.items.filter { $0 != before.item(withID: $0.id) }.count
            #expect(batch.counts == OperationCounts(changed == 0 ? [:] : [.update: changed]))
        }
    }

    @Test func theWeatherServiceDrivesTheFeed() async throws {
        let week = try await ViewModelHarness(WeekViewModel())
        let task = week.host.follow(WeatherService(every: .milliseconds(1)).readings().prefix(5)) { state, reading in state.apply(reading) }
        try await task.value
        let version = await week.version
        #expect(version > 1 && version <= 6)
        #expect(try wire(WeekViewModel(), await week.state) == (await week.snapshot))
    }
}
