import DiffStream
import DiffStreamJSON
import Examples
import FeedServer
import Testing

// Each example's screens as strings (`Snapshot.debugString`), and the batch each of its actions
// publishes (`Batch.debugString`), driven through the hosting API without a server.

/// The screen of a hosted feed, as the registry holds it (what a subscriber is sent).
func screen(_ registry: FeedRegistry, _ name: String = "feed") async -> String {
    await registry.feed(name)?.snapshot.debugString ?? "(no feed)"
}

/// The batch that `change` published on the feed `name`, as text.
func batch(_ registry: FeedRegistry, _ name: String = "feed", around change: () async throws -> Void) async throws -> String {
    let before = await registry.feed(name)?.snapshot ?? WireSnapshot()
    try await change()
    return WireSnapshot.diff(from: before, to: await registry.feed(name)?.snapshot ?? WireSnapshot()).debugString
}

extension HomeViewModelTests {
    @Test func theSampleScreen() async throws {
        let (_, registry) = try await hosted(model, as: "home")
        let shown = await screen(registry, "home")
        #expect(shown == #"""
            banner: [banner banner-welcome {"subtitle":"Every change is one batch of operations","title":"Welcome to DiffStream"}]
            suggested {"title":"Suggested"}: [image suggested-m1 {"id":"m1","title":"Northern lights","url":"/media/m1.jpg"}, video suggested-m2 {"id":"m2","title":"Ocean waves","url":"/media/m2.mp4"}, image suggested-m3 {"id":"m3","title":"Desert dunes","url":"/media/m3.jpg"}, image suggested-m4 {"id":"m4","title":"City at night","url":"/media/m4.jpg"}]
            recommended {"isFeatured":false,"title":"Recommended for you"}: [video recommended-m5 {"id":"m5","title":"Mountain trail","url":"/media/m5.mp4"}, video recommended-m2 {"id":"m2","title":"Ocean waves","url":"/media/m2.mp4"}, image recommended-m6 {"id":"m6","title":"Autumn forest","url":"/media/m6.jpg"}, image recommended-m7 {"id":"m7","title":"Snowy peaks","url":"/media/m7.jpg"}]
            """#)
    }

    @Test func aPatchPublishesOneBatch() async throws {
        let (host, registry) = try await hosted(model, as: "home")
        let published = try await batch(registry, "home") {
            _ = try await host.patch(body: Array(#"{"banner":null,"recommendedHeader":{"isFeatured":true}}"#.utf8))
        }
        #expect(published == #"""
            deleteSection banner
            updateSection recommended {"isFeatured":true,"title":"Recommended for you"}
            """#)
        let shown = await screen(registry, "home")
        #expect(shown == #"""
            suggested {"title":"Suggested"}: [image suggested-m1 {"id":"m1","title":"Northern lights","url":"/media/m1.jpg"}, video suggested-m2 {"id":"m2","title":"Ocean waves","url":"/media/m2.mp4"}, image suggested-m3 {"id":"m3","title":"Desert dunes","url":"/media/m3.jpg"}, image suggested-m4 {"id":"m4","title":"City at night","url":"/media/m4.jpg"}]
            recommended {"isFeatured":true,"title":"Recommended for you"}: [video recommended-m5 {"id":"m5","title":"Mountain trail","url":"/media/m5.mp4"}, video recommended-m2 {"id":"m2","title":"Ocean waves","url":"/media/m2.mp4"}, image recommended-m6 {"id":"m6","title":"Autumn forest","url":"/media/m6.jpg"}, image recommended-m7 {"id":"m7","title":"Snowy peaks","url":"/media/m7.jpg"}]
            """#)
    }
}

extension BlackjackViewModelTests {
    /// A hand dealt from an unshuffled deck: the deck is dealt from its end.
    static func ordered() -> BlackjackViewModel.State {
        var state = BlackjackViewModel.State()
        state.deckNumber = 1
        state.deck = ["2", "9", "K", "A", "5"].map { BlackjackViewModel.Card(deck: 1, rank: $0, suit: "♠") }
        state.hand = [state.deck.removeLast()]
        return state
    }

    @Test func dealingAddsACardAndUpdatesTheHand() async throws {
        let registry = FeedRegistry(replayLimit: 8)
        let host = try await HostedFeeds(registry: registry).host(BlackjackViewModel(), as: "feed", state: Self.ordered())
        let dealt = await screen(registry)
        #expect(dealt == #"""
            hand {"remaining":4,"score":5,"status":"playing","title":"Blackjack"}: [card card-1-5♠ {"rank":"5","suit":"♠","value":5}]
            """#)
        let first = try await batch(registry) { _ = try await host.perform("deal", body: []) }
        #expect(first == #"""
            insert card card-1-A♠ {"rank":"A","suit":"♠","value":11} into hand at end
            updateSection hand {"remaining":3,"score":16,"status":"playing","title":"Blackjack"}
            """#)
        let second = try await batch(registry) { _ = try await host.perform("deal", body: []) }
        #expect(second == #"""
            insert card card-1-K♠ {"rank":"K","suit":"♠","value":10} into hand at end
            updateSection hand {"remaining":2,"score":16,"status":"playing","title":"Blackjack"}
            """#)
        let afterTwoDeals = await screen(registry)
        #expect(afterTwoDeals == #"""
            hand {"remaining":2,"score":16,"status":"playing","title":"Blackjack"}: [card card-1-5♠ {"rank":"5","suit":"♠","value":5}, card card-1-A♠ {"rank":"A","suit":"♠","value":11}, card card-1-K♠ {"rank":"K","suit":"♠","value":10}]
            """#)
    }
}

extension ForecastViewModelTests {
    @Test func theSampleScreenAndSelectingADay() async throws {
        let (host, registry) = try await hosted(ForecastViewModel())
        let shown = await screen(registry)
        #expect(shown == #"""
            hourly {"title":"Hourly · Monday"}: [hour h-06 {"hour":"06:00","icon":"☀️","temp":10}, hour h-09 {"hour":"09:00","icon":"⛅","temp":13}, hour h-12 {"hour":"12:00","icon":"☁️","temp":12}, hour h-15 {"hour":"15:00","icon":"🌧️","temp":15}, hour h-18 {"hour":"18:00","icon":"☀️","temp":14}, hour h-21 {"hour":"21:00","icon":"⛅","temp":17}]
            daily {"title":"Daily"}: [day d-mon {"high":16,"icon":"☀️","low":8,"name":"Monday","selected":true}, day d-tue {"high":17,"icon":"⛅","low":9,"name":"Tuesday","selected":false}, day d-wed {"high":18,"icon":"☁️","low":10,"name":"Wednesday","selected":false}, day d-thu {"high":19,"icon":"🌧️","low":8,"name":"Thursday","selected":false}, day d-fri {"high":20,"icon":"☀️","low":9,"name":"Friday","selected":false}]
            """#)
        let selected = try await batch(registry) { _ = try await host.perform("select", body: Array(#"{"day":"d-tue"}"#.utf8)) }
        #expect(selected == #"""
            updateSection hourly {"title":"Hourly · Tuesday"}
            update hour h-06 {"hour":"06:00","icon":"⛅","temp":12}
            update hour h-12 {"hour":"12:00","icon":"🌧️","temp":14}
            update hour h-18 {"hour":"18:00","icon":"⛅","temp":16}
            update day d-mon {"high":16,"icon":"☀️","low":8,"name":"Monday","selected":false}
            update day d-tue {"high":17,"icon":"⛅","low":9,"name":"Tuesday","selected":true}
            """#)
    }
}

extension WeekViewModelTests {
    @Test func theSampleScreenAndAReading() async throws {
        let (host, registry) = try await hosted(WeekViewModel())
        let shown = await screen(registry)
        #expect(shown == #"""
            days {"title":"This week"}: [day day-mon {"condition":"Sunny","high":18,"icon":"☀️","low":9,"name":"Monday"}, day day-tue {"condition":"Cloudy","high":19,"icon":"☁️","low":10,"name":"Tuesday"}, day day-wed {"condition":"Rain","high":20,"icon":"🌧️","low":11,"name":"Wednesday"}, day day-thu {"condition":"Storm","high":21,"icon":"⛈️","low":9,"name":"Thursday"}, day day-fri {"condition":"Snow","high":18,"icon":"❄️","low":10,"name":"Friday"}, day day-sat {"condition":"Partly cloudy","high":19,"icon":"⛅","low":11,"name":"Saturday"}, day day-sun {"condition":"Sunny","high":20,"icon":"☀️","low":9,"name":"Sunday"}]
            """#)
        var tuesday = WeekViewModel.sample.days[1]
        tuesday.high += 3
        tuesday.condition = .storm
        let reading = try await batch(registry) { try await host.update { state in state.apply([tuesday]) } }
        #expect(reading == #"""
            update day day-tue {"condition":"Storm","high":22,"icon":"⛈️","low":10,"name":"Tuesday"}
            """#)
    }
}

extension TodoViewModelTests {
    @Test func theScreensOfAListBeingWorkedThrough() async throws {
        let (host, registry) = try await hosted(TodoViewModel())
        let empty = await screen(registry)
        #expect(empty == #"""
            todo {"title":"To do"}: []
            done {"title":"Done"}: []
            """#)
        let added = try await batch(registry) { _ = try await perform(host, "add", #"{"title":"milk"}"#) }
        #expect(added == #"""
            insert todo t1 {"done":false,"title":"milk"} into todo at end
            """#)
        let addedBefore = try await batch(registry) { _ = try await perform(host, "add", #"{"title":"eggs","before":"t1"}"#) }
        #expect(addedBefore == #"""
            insert todo t2 {"done":false,"title":"eggs"} into todo before t1
            """#)
        let toggled = try await batch(registry) { _ = try await perform(host, "toggle", #"{"id":"t1"}"#) }
        #expect(toggled == #"""
            move t1 to done at end
            update todo t1 {"done":true,"title":"milk"}
            """#)
        let afterToggle = await screen(registry)
        #expect(afterToggle == #"""
            todo {"title":"To do"}: [todo t2 {"done":false,"title":"eggs"}]
            done {"title":"Done"}: [todo t1 {"done":true,"title":"milk"}]
            """#)
        let renamed = try await batch(registry) { _ = try await perform(host, "rename", #"{"id":"t2","title":"brown eggs"}"#) }
        #expect(renamed == #"""
            update todo t2 {"done":false,"title":"brown eggs"}
            """#)
        let cleared = try await batch(registry) { _ = try await perform(host, "clearDone") }
        #expect(cleared == #"""
            delete t1
            """#)
        let afterClear = await screen(registry)
        #expect(afterClear == #"""
            todo {"title":"To do"}: [todo t2 {"done":false,"title":"brown eggs"}]
            done {"title":"Done"}: []
            """#)
    }
}
