import DiffStream
import DiffStreamJSON
import DiffStreamTesting
import FeedServer
import HTTPCore
import Testing

/// A counter with a label: the smallest view model with actions (with and without input), a patch
/// that is validated, and a source (readings that set the count).
struct Counter: HostedViewModel {
    struct State: Codable, Sendable, Equatable {
        var count = 0
        var label = "Count"
    }

    struct CounterSection: WireSectionConvertible {
        var id = "counter"
        var label: String
        var wireSection: WireSection { WireSection(id: id, model: ["label": .string(label)]) }
    }

    struct CountItem: WireItemConvertible {
        var id = "count"
        var value: Int
        var wireItem: WireItem { WireItem(id: id, kind: "count", model: ["value": .number(Double(value))]) }
    }

    struct Amount: Codable, Sendable {
        var amount: Int
    }

    var initialState: State { State() }
    var acceptsPatch: Bool { true }

    func render(_ state: State) throws -> Snapshot<CounterSection, CountItem> {
        try Snapshot { Section(CounterSection(label: state.label)) { CountItem(value: state.count) } }
    }

    var actions: [HostedAction<State>] {
        [
            HostedAction("increment") { state in state.count += 1 },
            HostedAction("add", input: Amount.self, fields: [ActionField("amount", .integer)]) { state, input in
                guard input.amount > 0 else { throw InvalidInput(field: "amount", "must be positive, not \(input.amount)") }
                state.count += input.amount
            },
            HostedAction("nothing") { _ in },
        ]
    }

    func validate(_ state: State) throws {
        if state.label.isEmpty { throw InvalidInput(field: "label", "must not be empty") }
    }
}

struct ViewModelHarnessTests {
    @Test func hostsTheInitialScreenAtVersionOne() async throws {
        let counter = try await ViewModelHarness(Counter())
        #expect(await counter.version == 1)
        #expect(await counter.state == Counter.State())
        #expect(await counter.snapshot.debugString == #"counter {"label":"Count"}: [count count {"value":0}]"#)
    }

    @Test func startsFromAGivenState() async throws {
        let counter = try await ViewModelHarness(Counter(), state: Counter.State(count: 7, label: "Seven"), as: "seven")
        #expect(counter.name == "seven")
        #expect(await counter.snapshot.debugString == #"counter {"label":"Seven"}: [count count {"value":7}]"#)
    }

    @Test func actionsWithAndWithoutInputPublishOneBatchEach() async throws {
        let counter = try await ViewModelHarness(Counter())
        let incremented = try await counter.perform("increment")
        #expect(incremented.version == 2)
        #expect(incremented.batch.debugString == #"update count count {"value":1}"#)
        let added = try await counter.perform("add", Counter.Amount(amount: 4))
        #expect(added.version == 3)
        #expect(added.batch.debugString == #"update count count {"value":5}"#)
        let raw = try await counter.perform("add", json: #"{"amount":2}"#)
        #expect(raw.snapshot.debugString == #"counter {"label":"Count"}: [count count {"value":7}]"#)
        #expect(await counter.version == 4)
        #expect(await counter.state.count == 7)
    }

    @Test func aPatchIsMergedAndValidated() async throws {
        let counter = try await ViewModelHarness(Counter())
        let renamed = try await counter.patch(json: #"{"label":"Total"}"#)
        #expect(renamed.batch.debugString == #"updateSection counter {"label":"Total"}"#)
        let typed = try await counter.patch(["count": 3])
        #expect(typed.snapshot.debugString == #"counter {"label":"Total"}: [count count {"value":3}]"#)
        await #expect(throws: ViewModelError.invalidField(field: "label", reason: "must not be empty")) {
            try await counter.patch(json: #"{"label":""}"#)
        }
        #expect(await counter.state == Counter.State(count: 3, label: "Total"))
    }

    @Test func aSourceElementGoesThroughTheSourcePath() async throws {
        let counter = try await ViewModelHarness(Counter())
        let readings = counter.source(of: Int.self) { state, reading in
            guard reading >= 0 else { throw InvalidInput(field: "reading", "negative") }
            state.count = reading
        }
        let first = try await readings.send(10)
        #expect(first.version == 2)
        #expect(first.batch.debugString == #"update count count {"value":10}"#)
        await #expect(throws: ViewModelError.invalidField(field: "reading", reason: "negative")) {
            try await readings.send(-1)
        }
        #expect(await counter.host.lastSourceError == .invalidField(field: "reading", reason: "negative"))
        #expect(try await readings.send(10).batch.debugString == "")
        #expect(await counter.host.lastSourceError == nil)
        #expect(await counter.version == 2)
    }

    @Test func aStepThatChangesNothingPublishesAnEmptyBatchAndNoVersion() async throws {
        let counter = try await ViewModelHarness(Counter())
        let nothing = try await counter.perform("nothing")
        #expect(nothing.batch.isEmpty && nothing.batch.debugString == "" && nothing.version == 1)
        let sameLabel = try await counter.patch(json: #"{"label":"Count"}"#)
        #expect(sameLabel.batch.isEmpty && sameLabel.version == 1)
        #expect(await counter.version == 1)
        #expect(await counter.snapshot.debugString == #"counter {"label":"Count"}: [count count {"value":0}]"#)
    }

    @Test func anUpdateSettingTheSameStateIsAnEmptyStep() async throws {
        let counter = try await ViewModelHarness(Counter())
        let step = try await counter.update { state in state.count = 0 }
        #expect(step.batch.isEmpty && step.batch.debugString == "" && step.version == 1)
    }

    @Test func refusedInputThrowsTheDomainError() async throws {
        let counter = try await ViewModelHarness(Counter())
        await #expect(throws: ViewModelError.invalidField(field: "amount", reason: "must be positive, not -2")) {
            try await counter.perform("add", Counter.Amount(amount: -2))
        }
        await #expect(throws: ViewModelError.unknownAction(feed: "feed", action: "jump")) {
            try await counter.perform("jump")
        }
    }

    @Test(arguments: [
        ("add", #"{"amount":-2}"#, 422, #"{"error":"invalid field","detail":"amount: must be positive, not -2"}"# + "\n"),
        ("add", #"{"amount":"two"}"#, 422, #"{"error":"invalid field","detail":"amount: expected a whole number"}"# + "\n"),
        ("add", #"{"amount":"#, 400, nil),
        ("increment", #"{"by":1}"#, 422, #"{"error":"invalid field","detail":"by: unknown field (this action takes no fields)"}"# + "\n"),
        ("jump", "", 404, #"{"error":"not found","detail":"no action 'jump' on feed 'feed'"}"# + "\n"),
        ("add", #"{"amount":2}"#, 200, #"{"feed":"feed","version":2,"ops":1}"# + "\n"),
    ] as [(String, String, Int, String?)])
    func answersAsTheAPIDoes(action: String, json: String, status: Int, body: String?) async throws {
        let counter = try await ViewModelHarness(Counter())
        let response = await counter.response(toAction: action, json: json)
        #expect(response.status == status)
        if let body { #expect(response.body == body) }
    }

    /// A view model that does not take `PATCH` refuses it, state unchanged, with the `405` and body the
    /// API answers (FeedAPI's route table).
    @Test func aPatchOfAViewModelThatTakesNoneIsRefusedAsTheAPIDoes() async throws {
        struct Fixed: HostedViewModel {
            var initialState: Counter.State { Counter.State() }
            func render(_ state: Counter.State) throws -> Snapshot<Counter.CounterSection, Counter.CountItem> { try Counter().render(state) }
        }
        let fixed = try await ViewModelHarness(Fixed())
        let refused = await fixed.response(toPatch: #"{"count":1}"#)
        #expect(refused == .init(status: 405, body: #"{"error":"method not allowed","detail":"PATCH is not allowed here; allowed: GET, HEAD"}"# + "\n"))
        await #expect(throws: ViewModelError.patchNotAccepted(feed: "feed")) { try await fixed.patch(json: #"{"count":1}"#) }
        #expect(await fixed.version == 1)
        #expect(await fixed.state == Counter.State())

        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry)
        _ = try await hosted.host(Fixed(), as: "feed")
        let api = FeedAPI(registry: registry, hosted: hosted, files: nil, options: .init(), serverMetrics: { nil })
        let answer = await api.handle(HTTPRequest(method: "PATCH", target: "/feeds/feed", headers: ["Host": "x"], body: Array(#"{"count":1}"#.utf8)))
        guard case .bytes(let bytes) = answer.body else { Issue.record("\(answer.body)"); return }
        #expect(answer.status.code == refused.status && String(decoding: bytes, as: UTF8.self) == refused.body)
    }

    @Test func answersAPatchAsTheAPIDoes() async throws {
        let counter = try await ViewModelHarness(Counter())
        let refused = await counter.response(toPatch: #"{"label":""}"#)
        #expect(refused == .init(status: 422, body: #"{"error":"invalid field","detail":"label: must not be empty"}"# + "\n"))
        #expect(await counter.version == 1)
        let taken = await counter.response(toPatch: #"{"count":1}"#)
        #expect(taken == .init(status: 200, body: #"{"feed":"feed","version":2,"ops":1}"# + "\n"))
    }
}
