// docs/view-models.md, "Your own view model": hosting it, verbatim, as the body of a function.
import DiffStreamServer

func hostTodos() async throws {
let server = try await Server(configuration: Server.Configuration())
try await server.host(Todos(), as: "todo")   // POST /feeds/todo/actions/add {"title":"Milk"}
try await server.run()                       // until SIGINT/SIGTERM
}
