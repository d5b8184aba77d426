// docs/view-models.md, "Testing your view model", verbatim (in the module of Todos, as with `@testable import`):
import DiffStreamServer    // ViewModelError
import DiffStreamTesting
import Testing

@Test func addingATodo() async throws {
    let todos = try await ViewModelHarness(Todos())
    let added = try await todos.perform("add", ["title": "Milk"])    // or perform("add", json: "{…}")
    #expect(added.version == 2)
    #expect(added.batch.debugString == #"insert todo t1 {"done":false,"title":"Milk"} into todo at end"#)
    #expect(await todos.snapshot.debugString == #"""
        todo {"title":"To do"}: [todo t1 {"done":false,"title":"Milk"}]
        done {"title":"Done"}: []
        """#)
    await #expect(throws: ViewModelError.invalidField(field: "title", reason: "expected 1 to 200 characters, not 0")) {
        try await todos.perform("add", ["title": ""])
    }
    let answer = await todos.response(toAction: "add", json: #"{"title":""}"#)   // what the API answers
    #expect(answer.status == 422)   // {"error":"invalid field","detail":"title: expected 1 to 200 characters, not 0"}
}
