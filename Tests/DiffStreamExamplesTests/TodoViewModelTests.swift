import DiffStream
import DiffStreamJSON
import DiffStreamTesting
import DiffStreamExamples
import FeedServer
import Testing

struct TodoViewModelTests {
    @Test func twoSectionsFromTheStart() async throws {
        let snapshot = try await ViewModelHarness(TodoViewModel()).snapshot
        #expect(snapshot.sectionIDs == ["todo", "done"])
        #expect(snapshot.sections.map(\.model.value) == [["title": "To do"], ["title": "Done"]])
    }

    @Test func addTogglesRenameMoveRemoveAndClear() async throws {
        let todo = try await ViewModelHarness(TodoViewModel())
        #expect(try await todo.perform("add", ["title": "milk"]).batch.operations.count == 1)
        _ = try await todo.perform("add", json: #"{"title":"eggs"}"#)
        _ = try await todo.perform("add", json: #"{"title":"bread","before":"t1"}"#)
        #expect(await todo.state.todos.map(\.id) == ["t3", "t1", "t2"])
        let toggled = try await todo.perform("toggle", json: #"{"id":"t1"}"#).batch.counts
        #expect(toggled == OperationCounts([.move: 1, .update: 1]))
        #expect(await todo.snapshot.items(inSection: "done")?.map(\.id) == ["t1"])
        let renamed = try await todo.perform("rename", json: #"{"id":"t2","title":"brown eggs"}"#).batch.counts
        #expect(renamed == OperationCounts([.update: 1]))
        let moved = try await todo.perform("move", json: #"{"id":"t3","before":null}"#).batch.counts
        #expect(moved == OperationCounts([.move: 1]))
        #expect(await todo.snapshot.items(inSection: "todo")?.map(\.id) == ["t2", "t3"])
        _ = try await todo.perform("toggle", json: #"{"id":"t2"}"#)
        let cleared = try await todo.perform("clearDone").batch.counts
        #expect(cleared == OperationCounts([.delete: 2]))
        #expect(try await todo.perform("clearDone").batch.isEmpty)
        let removed = try await todo.perform("remove", json: #"{"id":"t3"}"#).batch.counts
        #expect(removed == OperationCounts([.delete: 1]))
        _ = try await todo.perform("add", json: #"{"title":"again"}"#)
        #expect(await todo.state.todos.map(\.id) == ["t4"], "ids are never reused")
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
        let todo = try await ViewModelHarness(TodoViewModel())
        _ = try await todo.perform("add", json: #"{"title":"first"}"#)
        let before = await todo.state
        await #expect {
            try await todo.perform(action, json: body)
        } throws: { error in
            isRefusal(error) && "\(error)".hasPrefix("\(field):")
        }
        #expect(await todo.state == before)
        #expect(await todo.version == 2)
        #expect(await todo.response(toAction: action, json: body).status == 422)
    }

    @Test func titlesCountCharactersNotBytes() async throws {
        let todo = try await ViewModelHarness(TodoViewModel())
        let title = String(repeating: "é", count: 200)
        #expect(try await todo.perform("add", json: #"{"title":"\#(title)"}"#).batch.operations.count == 1)
    }

    @Test func theListHoldsAtMost500() async throws {
        var state = TodoViewModel.State()
        state.todos = (1...TodoViewModel.maximumCount).map { TodoViewModel.Todo(id: "t\($0)", title: "n\($0)", done: $0 % 2 == 0) }
        state.nextNumber = TodoViewModel.maximumCount + 1
        let todo = try await ViewModelHarness(TodoViewModel(), state: state)
        await #expect {
            try await todo.perform("add", json: #"{"title":"one more"}"#)
        } throws: { error in
            isRefusal(error) && "\(error)".contains("full")
        }
        _ = try await todo.perform("remove", json: #"{"id":"t1"}"#)
        #expect(try await todo.perform("add", json: #"{"title":"fits again"}"#).batch.operations.count == 1)
    }
}
