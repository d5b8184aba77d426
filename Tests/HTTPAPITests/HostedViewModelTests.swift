import DiffStream
import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import Testing

/// A view model defined here, in the test target, with the public API only.
struct Counter: HostedViewModel {
    struct State: Codable, Sendable, Equatable {
        var count = 0
        var label = "count"
    }

    struct CounterSection: Identifiable, Equatable, WireSectionConvertible {
        var id = "counter"
        var wireSection: WireSection { WireSection(id: id, model: ["title": "Counter"]) }
    }

    struct CounterItem: Identifiable, Equatable, WireItemConvertible {
        var id = "value"
        var state: State
        var wireItem: WireItem { WireItem(id: id, kind: "count", model: ["count": .number(Double(state.count)), "label": .string(state.label)]) }
    }

    struct Unshowable: Error, CustomStringConvertible { var description: String { "the label 'boom' cannot be shown" } }

    struct Add: Decodable, Sendable { var amount: Int }

    var initialState: State { State() }
    var acceptsPatch: Bool { true }
    /// Who is here (issue 55): off unless a test asks.
    var presence: HostedPresence = .off

    func render(_ state: State) throws -> Snapshot<CounterSection, CounterItem> {
        if state.label == "boom" { throw Unshowable() }
        return try Snapshot { Section(CounterSection()) { CounterItem(state: state) } }
    }

    var actions: [HostedAction<State>] {
        [
            HostedAction("increment") { state in state.count += 1 },
            HostedAction("add", input: Add.self, fields: [ActionField("amount", .integer)], isPublic: true) { state, input in
                guard input.amount >= 0 else { throw InvalidInput(field: "amount", "expected 0 or more") }
                state.count += input.amount
            },
        ]
    }

    func validate(_ state: State) throws {
        if state.label.isEmpty { throw InvalidInput(field: "label", "expected a non-empty string") }
    }
}

/// A hosted view model on a real server (port 0), driven over HTTP.
@Suite(.timeLimit(.minutes(1)))
struct HostedViewModelTests {
    func withCounter(_ body: (TestServer, ViewModelHost<Counter>) async throws -> Void) async throws {
        let server = try TestServer()
        let host = try await server.hosted.host(Counter(), as: "counter")
        do {
            try await body(server, host)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func document(_ server: TestServer) async throws -> (version: Int, count: Int) {
        let json = try await server.request("GET", "/feeds/counter").json
        let version = Int(json?["version"]?.numberValue ?? -1)
        let count = json?["sections"]?.arrayValue?.first?["items"]?.arrayValue?.first?["model"]?["count"]?.numberValue
        return (version, Int(count ?? -1))
    }

    @Test func goodInputChangesTheStateAndPublishes() async throws {
        try await withCounter { server, host in
            let reply = try await server.request("POST", "/feeds/counter/actions/add", body: #"{"amount":2}"#)
            #expect(reply.status == 200)
            #expect(reply.json == ["feed": "counter", "version": 2, "ops": 1])
            #expect(try await server.request("POST", "/feeds/counter/actions/increment").json?["version"] == 3)
            #expect(try await document(server) == (3, 3))
            #expect(await host.state.count == 3)
            let patched = try await server.request("PATCH", "/feeds/counter", body: #"{"label":"clicks"}"#)
            #expect(patched.json == ["feed": "counter", "version": 4, "ops": 1])
            #expect(await host.state == Counter.State(count: 3, label: "clicks"))
            #expect(try await server.request("POST", "/feeds/counter/actions/add", body: #"{"amount":0}"#).json == ["feed": "counter", "version": 4, "ops": 0])
        }
    }

    @Test(arguments: [
        ("POST", "/feeds/counter/actions/add", #"{"amount":"two"}"#, 422, "amount: expected a whole number"),
        ("POST", "/feeds/counter/actions/add", #"{}"#, 422, "amount: missing"),
        ("POST", "/feeds/counter/actions/add", #"{"amount":1,"extra":true}"#, 422, "extra: unknown field"),
        ("POST", "/feeds/counter/actions/add", #"{"amount":-1}"#, 422, "amount: expected 0 or more"),
        ("POST", "/feeds/counter/actions/add", #"[1]"#, 422, "JSON object"),
        ("POST", "/feeds/counter/actions/add", #"{"amount":"#, 400, "invalid JSON"),
        ("POST", "/feeds/counter/actions/increment", #"{"by":2}"#, 422, "by: unknown field"),
        ("PATCH", "/feeds/counter", #"{"count":"many"}"#, 422, "count: expected a whole number"),
        ("PATCH", "/feeds/counter", #"{"label":""}"#, 422, "label: expected a non-empty string"),
        ("PATCH", "/feeds/counter", #"{"colour":"red"}"#, 422, "colour: unknown field"),
        ("POST", "/feeds/counter/actions/reset", "", 404, "no action 'reset'"),
        ("GET", "/feeds/counter/actions/add", "", 405, "allowed: POST"),
        ("PUT", "/feeds/counter", #"{"sections":[]}"#, 409, "view model"),
        ("DELETE", "/feeds/counter", "", 409, "view model"),
    ])
    func badInputIsRefusedNamingTheFieldAndChangesNothing(method: String, path: String, body: String, status: Int, detail: String) async throws {
        try await withCounter { server, host in
            _ = try await server.request("POST", "/feeds/counter/actions/increment")
            let reply = try await server.request(method, path, body: body)
            #expect(reply.status == status)
            #expect(reply.json?["detail"]?.stringValue?.contains(detail) == true, "\(reply.body)")
            #expect(try await document(server) == (2, 1))
            #expect(await host.state == Counter.State(count: 1, label: "count"))
        }
    }

    @Test func fiftyConcurrentIncrementsEndAtFiftyInFiftyBatches() async throws {
        try await withCounter { server, _ in
            let events = try await server.subscribe("/feeds/counter/events")
            defer { events.close() }
            #expect(await events.next(1).first?.type == "snapshot")
            let versions = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask { Int(try await server.request("POST", "/feeds/counter/actions/increment").json?["version"]?.numberValue ?? -1) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(versions.sorted() == Array(2...51), "each action answers with the version its own change produced")
            let batches = await events.next(50)
            #expect(batches.allSatisfy { $0.type == "batch" && $0.data["ops"]?.arrayValue?.count == 1 })
            #expect(batches.map { Int($0.data["version"]?.numberValue ?? 0) } == Array(2...51))
            #expect(try await document(server) == (51, 50))
            // Nothing else was published: the next change is the very next event.
            _ = try await server.request("POST", "/feeds/counter/actions/increment")
            #expect(await events.next(1).first?.data["version"] == 52)
        }
    }

    @Test func anAsyncSequenceSourcePublishesOneBatchPerChangingElement() async throws {
        try await withCounter { server, host in
            let events = try await server.subscribe("/feeds/counter/events")
            defer { events.close() }
            #expect(await events.next(1).first?.type == "snapshot")
            let readings = [1, 1, 2, 2, 2, 5, 5]  // three of them change the snapshot
            try await host.follow(AsyncStream { continuation in
                for reading in readings { continuation.yield(reading) }
                continuation.finish()
            }) { state, reading in state.count = reading }.value
            let batches = await events.next(3)
            #expect(batches.map { $0.data["version"] } == [2, 3, 4])
            #expect(batches.map { $0.data["ops"]?.arrayValue?.first?["model"]?["count"] } == [1, 2, 5])
            _ = try await server.request("POST", "/feeds/counter/actions/increment")
            #expect(await events.next(1).first?.data["version"] == 5, "no batch for the elements that changed nothing")
        }
    }

    @Test func aThrowingRenderPublishesNothingAndKeepsTheState() async throws {
        try await withCounter { server, host in
            let events = try await server.subscribe("/feeds/counter/events")
            defer { events.close() }
            #expect(await events.next(1).first?.type == "snapshot")
            _ = try await server.request("POST", "/feeds/counter/actions/add", body: #"{"amount":12}"#)
            let refused = try await server.request("PATCH", "/feeds/counter", body: #"{"label":"boom"}"#)
            #expect(refused.status == 422)
            #expect(refused.json?["detail"]?.stringValue?.contains("the label 'boom' cannot be shown") == true)
            #expect(await host.state.label == "count")
            #expect(await host.state.count == 12)
            #expect(try await document(server) == (2, 12))
            _ = try await server.request("POST", "/feeds/counter/actions/add", body: #"{"amount":2}"#)
            let batches = await events.next(2)
            #expect(batches.map { $0.data["version"] } == [2, 3])
            #expect(batches.last?.data["ops"]?.arrayValue?.first?["model"]?["count"] == 14)
        }
    }

    @Test func feedsAreListedWithTheirKindAndActions() async throws {
        try await withCounter { server, _ in
            _ = try await server.request("PUT", "/feeds/plain", body: #"{"sections":[]}"#)
            let list = try await server.request("GET", "/feeds").json
            #expect(list == [
                ["feed": "counter", "version": 1, "kind": "viewModel", "patch": true, "actions": [
                    ["name": "increment", "public": false, "fields": []],
                    ["name": "add", "public": true, "fields": [["name": "amount", "type": "integer", "optional": false, "nullable": false]]],
                ]],
                ["feed": "plain", "version": 1, "kind": "snapshot"],
            ])
            #expect(server.hosted.isPublic(action: "add", feed: "counter"))
            #expect(!server.hosted.isPublic(action: "increment", feed: "counter"))
            #expect(!server.hosted.isPublic(action: "add", feed: "plain"))
        }
    }

    @Test func hostingTwiceOrABadNameIsRefused() async throws {
        let server = try TestServer()
        try await server.hosted.host(Counter(), as: "counter")
        await #expect(throws: HostingError.self) { try await server.hosted.host(Counter(), as: "counter") }
        _ = try await server.request("PUT", "/feeds/plain", body: #"{"sections":[]}"#)
        // A feed written with PUT (or restored from the store) is taken over: PUT is refused from then on.
        try await server.hosted.host(Counter(), as: "plain")
        #expect(try await server.request("PUT", "/feeds/plain", body: #"{"sections":[]}"#).status == 409)
        #expect(try await server.request("GET", "/feeds/plain").json?["version"] == 2)
        await #expect(throws: HostingError.self) { try await server.hosted.host(Counter(), as: ".hidden") }
        await server.stop()
    }
}
