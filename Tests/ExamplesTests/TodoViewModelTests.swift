import DiffStream
import DiffStreamJSON
import Examples
import FeedServer
import Testing

struct TodoViewModelTests {
    func perform(_ host: ViewModelHost<TodoViewModel>, _ action: String, _ body: String = "{}") async throws -> ChangeResult {
        try await host.perform(action, body: Array(body.utf8))
    }

    func counts(_ registry: FeedRegistry, around change: () async throws -> Void) async throws -> OperationCounts {
        let before = await registry.feed("feed")!.snapshot
        try await change()
        return WireSnapshot.diff(from: before, to: await registry.feed("feed")!.snapshot).counts
    }

    @Test func twoSectionsFromTheStart() async throws {
        let (_, registry) = try await hosted(TodoViewModel())
        let snapshot = await registry.feed("feed")!.snapshot
        #expect(snapshot.sectionIDs == ["todo", "done"])
        #expect(snapshot.sections.map(\.model.value) == [["title": "To do"], ["title": "Done"]])
    }

    @Test func addTogglesRenameMoveRemoveAndClear() async throws {
        let (host, registry) = try await hosted(TodoViewModel())
        #expect(try await perform(host, "add", #"{"title":"milk"}"#).operations == 1)
        _ = try await perform(host, "add", #"{"title":"eggs"}"#)
        _ = try await perform(host, "add", #"{"title":"bread","before":"t1"}"#)
        #expect(await host.state.todos.map(\.id) == ["t3", "t1", "t2"])
        let toggled = try await counts(registry) { _ = try await perform(host, "toggle", #"{"id":"t1"}"#) }
        #expect(toggled == OperationCounts([.move: 1, .update: 1]))
        #expect(await registry.feed("feed")!.snapshot.items(inSection: "done")?.map(\.id) == ["t1"])
        let renamed = try await counts(registry) { _ = try await perform(host, "rename", #"{"id":"t2","title":"brown eggs"}"#) }
        #expect(renamed == OperationCounts([.update: 1]))
        let moved = try await counts(registry) { _ = try await perform(host, "move", #"{"id":"t3","before":null}"#) }
        #expect(moved == OperationCounts([.move: 1]))
        #expect(await registry.feed("feed")!.snapshot.items(inSection: "todo")?.map(\.id) == ["t2", "t3"])
        _ = try await perform(host, "toggle", #"{"id":"t2"}"#)
        let cleared = try await counts(registry) { _ = try await perform(host, "clearDone") }
        #expect(cleared == OperationCounts([.delete: 2]))
        #expect(try await perform(host, "clearDone").operations == 0)
        let removed = try await counts(registry) { _ = try await perform(host, "remove", #"{"id":"t3"}"#) }
        #expect(removed == OperationCounts([.delete: 1]))
        _ = try await perform(host, "add", #"{"title":"again"}"#)
        #expect(await host.state.todos.map(\.id) == ["t4"], "ids are never reused")
    }

    @Test(arguments: [
        ("add", #"{"title":""}"#, "title"),
        ("add", #"{"title":"\#(String(repeating: "x", count: 201))"}"#, "title"),
        ("add", #"{"title":"ok","before":"t9"}"#, "before"),
        ("add", #"{}"#, "title"),
        ("add", #"{"title":"ok","after":"t1"}"#, "after"),
        ("toggle", #"{"id":"t9"}"#, "id"),
        ("toggle", #"{"id":1}"#, "id"),
        ("rename", #"{"id":"t1","title":""}"#, "title"),
        ("rename", #"{"id":"nope","title":"x"}"#, "id"),
        ("remove", #"{"id":"nope"}"#, "id"),
        ("move", #"{"id":"t1","before":"t9"}"#, "before"),
        ("move", #"{"id":"t1"}"#, "before"),
        ("clearDone", #"{"x":1}"#, "x"),
    ])
    func badInputIs422NamingTheFieldAndChangesNothing(action: String, body: String, field: String) async throws {
        let (host, registry) = try await hosted(TodoViewModel())
        _ = try await perform(host, "add", #"{"title":"first"}"#)
        let before = await host.state
        await #expect {
            try await perform(host, action, body)
        } throws: { error in
            isRefusal(error) && "\(error)".hasPrefix("\(field):")
        }
        #expect(await host.state == before)
        #expect(await registry.feed("feed")!.version == 2)
    }

    @Test func titlesCountCharactersNotBytes() async throws {
        let (host, _) = try await hosted(TodoViewModel())
        let title = String(repeating: "é", count: 200)
        #expect(try await perform(host, "add", #"{"title":"\#(title)"}"#).operations == 1)
    }

    @Test func theListHoldsAtMost500() async throws {
        var state = TodoViewModel.State()
        state.todos = (1...TodoViewModel.maximumCount).map { TodoViewModel.Todo(id: "t\($0)", title: "n\($0)", done: $0 % 2 == 0) }
        state.nextNumber = TodoViewModel.maximumCount + 1
        let registry = FeedRegistry(replayLimit: 8)
        let host = try await HostedFeeds(registry: registry).host(TodoViewModel(), as: "feed", state: state)
        await #expect {
            try await perform(host, "add", #"{"title":"one more"}"#)
        } throws: { error in
            isRefusal(error) && "\(error)".contains("full")
        }
        _ = try await perform(host, "remove", #"{"id":"t1"}"#)
        #expect(try await perform(host, "add", #"{"title":"fits again"}"#).operations == 1)
    }
}
