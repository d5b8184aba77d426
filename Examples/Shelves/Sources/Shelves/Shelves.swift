import DiffStreamServer
import Foundation
import Logging

/// A reading shelf per user, `shelf.<user>`: the family's loader makes each one on first use.
/// `POST /feeds/shelf.alice/actions/add {"title": "Dune"}` adds a book; `PATCH` renames the shelf.
struct Shelf: HostedViewModel {
    struct State: Codable, Sendable { var owner: String; var books: [String] }
    struct Header: WireSectionConvertible {
        var owner: String
        var id: String { "shelf" }
        var wireSection: WireSection { WireSection(id: id, model: ["owner": .string(owner)]) }
    }
    struct Book: WireItemConvertible {
        var title: String
        var id: String { title.lowercased().filter { $0.isLetter || $0.isNumber } }
        var wireItem: WireItem { WireItem(id: id, kind: "book", model: ["title": .string(title)]) }
    }
    struct Add: Decodable, Sendable { var title: String }

    var initialState: State { State(owner: "", books: []) }
    var acceptsPatch: Bool { true }
    func render(_ state: State) throws -> Snapshot<Header, Book> {
        try Snapshot { Section(Header(owner: state.owner)) { for title in state.books { Book(title: title) } } }
    }
    var actions: [HostedAction<State>] {
        [HostedAction("add", input: Add.self, fields: [.string("title")]) { state, add in
            let book = Book(title: add.title)
            guard !book.id.isEmpty, add.title.count <= 100 else { throw InvalidInput(field: "title", "expected 1 to 100 characters with a letter or digit") }
            guard !state.books.contains(where: { Book(title: $0).id == book.id }) else { throw InvalidInput(field: "title", "already on the shelf") }
            state.books.append(add.title)
        }]
    }

    /// The program's "database": each user's first shelf, different for every key.
    static func load(_ user: String) throws -> State {
        guard user != "nobody" else { throw NoSuchMember() }  // answered 404
        return State(owner: user.prefix(1).uppercased() + user.dropFirst(), books: ["\(user.count) letters", "Books for \(user)"])
    }
}

@main struct Shelves {
    static func main() async {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let environment = ProcessInfo.processInfo.environment
        var configuration = Server.Configuration()
        configuration.port = UInt16(environment["SHELVES_PORT"] ?? "") ?? 8091  // 0 picks a free port
        configuration.dataDirectory = environment["SHELVES_DATA"] ?? "shelves-data"
        do {
            let server = try await Server(configuration: configuration)
            try await server.host(family: "shelf", Shelf()) { member in try Shelf.load(member.key) }
            try await server.run()  // logs its URL; until SIGINT/SIGTERM, then a graceful shutdown
        } catch {
            FileHandle.standardError.write(Data("shelves: \(error)\n".utf8))
            exit(1)
        }
    }
}
