import DiffStreamServer
import Foundation
import Logging
import ServiceLifecycle
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

struct ServerTests {
    /// A quiet server on a free port that leaves the process's signals alone.
    static func configuration() -> Server.Configuration {
        var configuration = Server.Configuration()
        configuration.port = 0
        configuration.loops = 1
        configuration.catchesSignals = false
        configuration.logger = Logger(label: "test") { SwiftLogNoOpLogHandler($0) }
        return configuration
    }

    @Test func configurationHasALibrarysDefaults() {
        let configuration = Server.Configuration()
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.publicDirectory == nil)
        #expect(configuration.sharing == nil)
        #expect(configuration.dataDirectory == nil)
        #expect(configuration.catchesSignals)
        #expect(configuration.logger.label == "diffstream")
        #expect(configuration.metricsRegistry == nil)
        #expect(configuration.token == nil && configuration.jwtSecret == nil && configuration.jwtPublicKeyPEM == nil)
        #expect(!configuration.privateReads && !configuration.openWrites)
        #expect(configuration.replay == 1024 && configuration.maxConnections == 10_000 && configuration.maxConnectionsPerAddress == 256)
        #expect(configuration.maxStoreBytes == nil)
    }

    @Test func startsOnPortZeroWithoutAPage() async throws {
        let server = try await Server(configuration: Self.configuration())
        try await server.host(Tally(), as: "tally")
        #expect(server.port == 0)
        let port = try await server.start()
        #expect(port != 0)
        #expect(server.port == port)
        #expect(try await server.start() == port)  // started once
        #expect(server.url == "http://127.0.0.1:\(port)")

        let feeds = try await get("/feeds", port: port)
        #expect(feeds.status == 200)
        #expect(feeds.body.contains("\"tally\""))
        #expect(try await get("/", port: port).status == 404)  // no page
        await server.shutdown()
    }

    @Test func runEndsWithItsServiceGroupsGracefulShutdown() async throws {
        let server = try await Server(configuration: Self.configuration())
        let group = ServiceGroup(configuration: .init(services: [server], logger: Logger(label: "test") { SwiftLogNoOpLogHandler($0) }))
        let running = Task { try await group.run() }
        // `start()` is idempotent: whichever of it and `run()` comes first listens, and both get that port
        // (awaited, not polled against a clock).
        let port = try await server.start()
        #expect(try await get("/feeds", port: port).status == 200)
        await group.triggerGracefulShutdown()
        try await running.value
        await #expect(throws: (any Error).self) { try await get("/feeds", port: server.port) }  // no longer listening
    }

    @Test func runEndsWhenItsTaskIsCancelled() async throws {
        let server = try await Server(configuration: Self.configuration())
        let running = Task { try await server.run() }
        _ = try await server.start()  // listening (by this call or by run's, the same port)
        running.cancel()
        try await running.value
    }

    @Test func aMissingPageDirectoryIsAStartError() async {
        var configuration = Self.configuration()
        configuration.publicDirectory = "/nonexistent/diffstream-public"
        await #expect { try await Server(configuration: configuration) } throws: { error in
            (error as? Server.StartError)?.kind == .publicDirectory
        }
    }

    @Test func aLockedDataDirectoryIsAStartError() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("diffstream-server-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Self.configuration()
        configuration.dataDirectory = directory
        let first = try await Server(configuration: configuration)
        await #expect { try await Server(configuration: configuration) } throws: { error in
            guard let error = error as? Server.StartError else { return false }
            return error.kind == .store && error.message.contains(directory) && error.cause == .dataDirectoryLocked(path: directory)
                && !error.message.contains("--data")  // the library names no flag; the command adds it
        }
        await first.shutdown()  // releases the lock
        let second = try await Server(configuration: configuration)
        await second.shutdown()
    }

    /// A shared store that cannot be opened: its error is the start's.
    struct RefusingSharing: FeedSharing {
        var defaultMaxStoreBytes: Int { 4096 }
        func open(_ start: SharingStart) async throws(Server.StartError) -> OpenedSharing {
            throw Server.StartError(.redis, "refused with max-store-bytes \(start.maxStoreBytes)")
        }
    }

    @Test func aSharedStoreThatCannotBeOpenedStopsTheStartWithItsError() async {
        var configuration = Self.configuration()
        configuration.sharing = RefusingSharing()
        configuration.dataDirectory = "/nonexistent/never-opened"  // not opened: the shared store replaces it
        await #expect { try await Server(configuration: configuration) } throws: { error in
            guard let error = error as? Server.StartError else { return false }
            return error.kind == .redis && error.message == "refused with max-store-bytes 4096"  // the sharing's default limit
        }
    }

    @Test func tasksGivenToCancelAtShutdownAreCancelledByTheShutdown() async throws {
        let server = try await Server(configuration: Self.configuration())
        try await server.start()
        let source = Task<Void, any Error> { try await Task.sleep(for: .seconds(3600)) }
        server.cancelAtShutdown(source)
        await server.shutdown()
        await #expect(throws: CancellationError.self) { try await source.value }
        let late = Task<Void, any Error> { try await Task.sleep(for: .seconds(3600)) }
        server.cancelAtShutdown(late)  // after the shutdown: cancelled at once
        await #expect(throws: CancellationError.self) { try await late.value }
    }
}

extension ServerTests {
    /// A port another server holds: `.listen`, with the cause a program explains in its own terms.
    @Test func aPortInUseIsAStartErrorWithItsCause() async throws {
        let first = try await Server(configuration: Self.configuration())
        let port = try await first.start()
        var configuration = Self.configuration()
        configuration.port = port
        let second = try await Server(configuration: configuration)
        await #expect { try await second.start() } throws: { error in
            guard let error = error as? Server.StartError else { return false }
            return error.kind == .listen && error.cause == .addressInUse(host: "127.0.0.1", port: port)
                && error.message.hasPrefix("port \(port) on 127.0.0.1 is in use by another program")
        }
        await second.shutdown()
        await first.shutdown()
    }
}

/// The smallest view model: one item counting `add` actions.
struct Tally: HostedViewModel {
    struct Board: WireSectionConvertible { var id: String { "board" }; var wireSection: WireSection { WireSection(id: id, model: nil) } }
    struct Count: WireItemConvertible { var id: String { "count" }; var value: Int; var wireItem: WireItem { WireItem(id: id, kind: "count", model: ["value": .number(Double(value))]) } }
    var initialState: Int { 0 }
    func render(_ state: Int) throws -> Snapshot<Board, Count> { try Snapshot { Section(Board()) { Count(value: state) } } }
    var actions: [HostedAction<Int>] { [HostedAction("add") { $0 += 1 }] }
}

/// One `GET path` to 127.0.0.1:`port` with `Connection: close`, on a thread of its own (never on the
/// cooperative pool the server's handlers need): the status code and the body.
func get(_ path: String, port: UInt16) async throws -> (status: Int, body: String) {
    try await onThread { try blockingGet(path, port: port) }
}

private func blockingGet(_ path: String, port: UInt16) throws -> (status: Int, body: String) {
    let socket = try TestSocket(port: port)
    defer { socket.close() }
    try socket.send("GET \(path) HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
    var received: [UInt8] = []
    while let chunk = try socket.receive() { received += chunk }
    let text = String(decoding: received, as: UTF8.self)
    guard let head = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ").dropFirst().first ?? "") else {
        throw TestFailure("not an HTTP response: \(text.prefix(200))")
    }
    return (status, String(text[head.upperBound...]))
}
