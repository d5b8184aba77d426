import DiffStream
import DiffStreamJSON
import DiffStreamTesting
import DiffStreamExamples
import FeedServer
import Testing

// Each example's screens as strings (`Snapshot.debugString`), and the batch each of its actions
// publishes (`Batch.debugString`), driven through `ViewModelHarness` (DiffStreamTesting) without a server.

extension HomeViewModelTests {
    @Test func theSampleScreen() async throws {
        let home = try await ViewModelHarness(model, as: "home")
        let shown = await home.snapshot.debugString
        #expect(shown == #"""
            banner: [banner banner-welcome {"subtitle":"Every change is one batch of operations","title":"Welcome to DiffStream"}]
            suggested {"title":"Suggested"}: [image suggested-m1 {"id":"m1","title":"Northern lights","url":"/media/m1.jpg"}, video suggested-m2 {"id":"m2","title":"Ocean waves","url":"/media/m2.mp4"}, image suggested-m3 {"id":"m3","title":"Desert dunes","url":"/media/m3.jpg"}, image suggested-m4 {"id":"m4","title":"City at night","url":"/media/m4.jpg"}]
            recommended {"isFeatured":false,"title":"Recommended for you"}: [video recommended-m5 {"id":"m5","title":"Mountain trail","url":"/media/m5.mp4"}, video recommended-m2 {"id":"m2","title":"Ocean waves","url":"/media/m2.mp4"}, image recommended-m6 {"id":"m6","title":"Autumn forest","url":"/media/m6.jpg"}, image recommended-m7 {"id":"m7","title":"Snowy peaks","url":"/media/m7.jpg"}]
            """#)
    }

    @Test func aPatchPublishesOneBatch() async throws {
        let home = try await ViewModelHarness(model, as: "home")
        let step = try await home.patch(json: #"{"banner":null,"recommendedHeader":{"isFeatured":true}}"#)
        #expect(step.version == 2)
        #expect(step.batch.debugString == #"""
            deleteSection banner
            updateSection recommended {"isFeatured":true,"title":"Recommended for you"}
            """#)
        #expect(step.snapshot.debugString == #"""
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
        let blackjack = try await ViewModelHarness(BlackjackViewModel(), state: Self.ordered())
        let dealt = await blackjack.snapshot.debugString
        #expect(dealt == #"""
            hand {"remaining":4,"score":5,"status":"playing","title":"Blackjack"}: [card card-1-5♠ {"rank":"5","suit":"♠","value":5}]
            """#)
        let first = try await blackjack.perform("deal")
        #expect(first.batch.debugString == #"""
            insert card card-1-A♠ {"rank":"A","suit":"♠","value":11} into hand at end
            updateSection hand {"remaining":3,"score":16,"status":"playing","title":"Blackjack"}
            """#)
        let second = try await blackjack.perform("deal")
        #expect(second.batch.debugString == #"""
            insert card card-1-K♠ {"rank":"K","suit":"♠","value":10} into hand at end
            updateSection hand {"remaining":2,"score":16,"status":"playing","title":"Blackjack"}
            """#)
        #expect(second.version == 3)
        #expect(second.snapshot.debugString == #"""
            hand {"remaining":2,"score":16,"status":"playing","title":"Blackjack"}: [card card-1-5♠ {"rank":"5","suit":"♠","value":5}, card card-1-A♠ {"rank":"A","suit":"♠","value":11}, card card-1-K♠ {"rank":"K","suit":"♠","value":10}]
            """#)
    }
}

extension ForecastViewModelTests {
    @Test func theSampleScreenAndSelectingADay() async throws {
        let forecast = try await ViewModelHarness(ForecastViewModel())
        let shown = await forecast.snapshot.debugString
        #expect(shown == #"""
            hourly {"title":"Hourly · Monday"}: [hour h-06 {"hour":"06:00","icon":"☀️","temp":10}, hour h-09 {"hour":"09:00","icon":"⛅","temp":13}, hour h-12 {"hour":"12:00","icon":"☁️","temp":12}, hour h-15 {"hour":"15:00","icon":"🌧️","temp":15}, hour h-18 {"hour":"18:00","icon":"☀️","temp":14}, hour h-21 {"hour":"21:00","icon":"⛅","temp":17}]
            daily {"title":"Daily"}: [day d-mon {"high":16,"icon":"☀️","low":8,"name":"Monday","selected":true}, day d-tue {"high":17,"icon":"⛅","low":9,"name":"Tuesday","selected":false}, day d-wed {"high":18,"icon":"☁️","low":10,"name":"Wednesday","selected":false}, day d-thu {"high":19,"icon":"🌧️","low":8,"name":"Thursday","selected":false}, day d-fri {"high":20,"icon":"☀️","low":9,"name":"Friday","selected":false}]
            """#)
        let selected = try await forecast.perform("select", ["day": "d-tue"])
        #expect(selected.batch.debugString == #"""
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
        let week = try await ViewModelHarness(WeekViewModel())
        let shown = await week.snapshot.debugString
        #expect(shown == #"""
            days {"title":"This week"}: [day day-mon {"condition":"Sunny","high":18,"icon":"☀️","low":9,"name":"Monday"}, day day-tue {"condition":"Cloudy","high":19,"icon":"☁️","low":10,"name":"Tuesday"}, day day-wed {"condition":"Rain","high":20,"icon":"🌧️","low":11,"name":"Wednesday"}, day day-thu {"condition":"Storm","high":21,"icon":"⛈️","low":9,"name":"Thursday"}, day day-fri {"condition":"Snow","high":18,"icon":"❄️","low":10,"name":"Friday"}, day day-sat {"condition":"Partly cloudy","high":19,"icon":"⛅","low":11,"name":"Saturday"}, day day-sun {"condition":"Sunny","high":20,"icon":"☀️","low":9,"name":"Sunday"}]
            """#)
        var tuesday = WeekViewModel.sample.days[1]
        tuesday.high += 3
        tuesday.condition = .storm
        // The update the week is hosted with (`Examples.host`), through the source path.
        let weather = week.source { state, reading in state.apply(reading) }
        let reading = try await weather.send([tuesday])
        #expect(reading.version == 2)
        #expect(reading.batch.debugString == #"""
            update day day-tue {"condition":"Storm","high":22,"icon":"⛈️","low":10,"name":"Tuesday"}
            """#)
    }
}

extension TodoViewModelTests {
    @Test func theScreensOfAListBeingWorkedThrough() async throws {
        let todo = try await ViewModelHarness(TodoViewModel())
        let empty = await todo.snapshot.debugString
        #expect(empty == #"""
            todo {"title":"To do"}: []
            done {"title":"Done"}: []
            """#)
        let added = try await todo.perform("add", json: #"{"title":"milk"}"#)
        #expect(added.batch.debugString == #"""
            insert todo t1 {"done":false,"title":"milk"} into todo at end
            """#)
        let addedBefore = try await todo.perform("add", json: #"{"title":"eggs","before":"t1"}"#)
        #expect(addedBefore.batch.debugString == #"""
            insert todo t2 {"done":false,"title":"eggs"} into todo before t1
            """#)
        let toggled = try await todo.perform("toggle", json: #"{"id":"t1"}"#)
        #expect(toggled.batch.debugString == #"""
            move t1 to done at end
            update todo t1 {"done":true,"title":"milk"}
            """#)
        #expect(toggled.snapshot.debugString == #"""
            todo {"title":"To do"}: [todo t2 {"done":false,"title":"eggs"}]
            done {"title":"Done"}: [todo t1 {"done":true,"title":"milk"}]
            """#)
        let renamed = try await todo.perform("rename", json: #"{"id":"t2","title":"brown eggs"}"#)
        #expect(renamed.batch.debugString == #"""
            update todo t2 {"done":false,"title":"brown eggs"}
            """#)
        let cleared = try await todo.perform("clearDone")
        #expect(cleared.batch.debugString == #"""
            delete t1
            """#)
        #expect(cleared.snapshot.debugString == #"""
            todo {"title":"To do"}: [todo t2 {"done":false,"title":"brown eggs"}]
            done {"title":"Done"}: []
            """#)
    }
}

// What the API answers an input the example refuses: `422`, naming the field, and nothing changes.

extension TodoViewModelTests {
    @Test func anEmptyTitleIsRefusedWith422() async throws {
        let todo = try await ViewModelHarness(TodoViewModel())
        await #expect(throws: ViewModelError.invalidField(field: "title", reason: "expected 1 to 200 characters, not 0")) {
            try await todo.perform("add", ["title": ""])
        }
        let answer = await todo.response(toAction: "add", json: #"{"title":""}"#)
        #expect(answer.status == 422)
        #expect(answer.body == #"{"error":"invalid field","detail":"title: expected 1 to 200 characters, not 0"}"# + "\n")
        #expect(await todo.version == 1)
        #expect(await todo.state == TodoViewModel.State())
    }
}

extension ForecastViewModelTests {
    @Test func anUnknownDayIsRefusedWith422() async throws {
        let forecast = try await ViewModelHarness(ForecastViewModel())
        let answer = await forecast.response(toAction: "select", json: #"{"day":"d-xyz"}"#)
        #expect(answer == .init(status: 422, body: #"""
            {"error":"invalid field","detail":"day: unknown day 'd-xyz' (expected one of d-mon, d-tue, d-wed, d-thu, d-fri)"}

            """#))
        #expect(await forecast.version == 1)
        #expect(await forecast.state == ForecastViewModel.sample)
    }
}

extension HomeViewModelTests {
    @Test func aPatchToAnUnknownFieldIsRefusedWith422() async throws {
        let home = try await ViewModelHarness(model, as: "home")
        let answer = await home.response(toPatch: #"{"nope":1}"#)
        #expect(answer == .init(status: 422, body: #"{"error":"invalid field","detail":"nope: unknown field"}"# + "\n"))
        #expect(await home.version == 1)
    }
}
