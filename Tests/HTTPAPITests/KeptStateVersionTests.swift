import DiffStream
import DiffStreamJSON
import FeedCore
import HTTPAPI
import ViewModelHosting
import FeedStorage
import Foundation
import HostingTestSupport
import HTTPCore
import Testing

/// What the suite asks of the API about the two builds of one program (``KeptStatePrograms``, shared
/// with the Redis suite).
extension KeptStatePrograms {
    static func request(_ method: String, _ target: String, _ body: String = "") -> HTTPRequest {
        HTTPRequest(method: method, target: target, headers: ["Host": "x"], body: Array(body.utf8))
    }

    static func body(_ response: HTTPResponse) -> String {
        if case .bytes(let bytes) = response.body { return String(decoding: bytes, as: UTF8.self) }
        return ""
    }

    static func api(_ registry: FeedRegistry, _ hosted: HostedFeeds) -> FeedAPI {
        FeedAPI(registry: registry, hosted: hosted, files: nil, options: .init(), serverMetrics: { nil })
    }

    /// The value of `diffstream_kept_state_unreadable_total` with `label` on `/metrics` (0 without one).
    static func unreadableCount(_ api: FeedAPI, _ label: String) async -> Double {
        let text = body(await api.handle(request("GET", "/metrics")))
        let prefix = "\(FamilyMetricName.keptStateUnreadable){\(label)} "
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
        return Double(line.dropFirst(prefix.count)) ?? 0
    }

    /// What a request to a feed whose kept state cannot be read answers: 500 naming the feed and the
    /// decoding error.
    static func expectUnreadable(_ response: HTTPResponse, _ feed: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status.code == 500, sourceLocation: sourceLocation)
        let text = body(response)
        #expect(text.contains(#""error":"kept state unreadable""#), sourceLocation: sourceLocation)
        #expect(text.contains("'\(feed)'") && text.contains("done: missing"), "\(text)", sourceLocation: sourceLocation)
    }
}

/// Kept state that survives a new program (issue 51, item 3): a state kept by version 1 of a view model
/// is migrated by version 2, or, without a migration, is left exactly as it is (the feed answers `500`,
/// nothing is written, the failure is logged and counted) until an operator resets it.
struct KeptStateVersionTests {
    typealias P = KeptStatePrograms
    static let users = 50

    // MARK: The form of the kept bytes

    @Test(arguments: [
        (1, #"{"a":1}"#, #"{"a":1}"#),
        (2, #"{"a":1}"#, #"{"_stateVersion":2,"a":1}"#),
        (3, "{}", #"{"_stateVersion":3}"#),
    ])
    func theVersionIsAKeyBesideTheFields(version: Int, state: String, kept: String) throws {
        let stamped = try KeptState.stamp(Array(state.utf8), version: version)
        #expect(String(decoding: stamped, as: UTF8.self) == kept)
        #expect(try KeptState.version(of: stamped) == version)
    }

    @Test func theStateOfVersion2IsReadByThePreviousRelease() throws {
        let bytes = try ViewModelHost<P.V2>.storedBytes(P.V2.State(title: "t", count: 3, done: true))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"_stateVersion":2,"count":3,"done":true,"title":"t"}"#)
        // What a release before versions does with them: `try?` into its own State, which ignores the keys it does not know.
        #expect(try JSONDecoder().decode(P.V1.State.self, from: Data(bytes)) == P.V1.State(title: "t", count: 3))
    }

    @Test func aStateThatIsNotAnObjectCannotCarryAVersion() {
        #expect(throws: ViewModelError.self) { try KeptState.stamp(Array("[1]".utf8), version: 2) }
        #expect(throws: ViewModelError.self) { try KeptState.version(of: Array(#"{"_stateVersion":"2"}"#.utf8)) }
    }

    // MARK: A family over the member store (--data)

    @Test(arguments: [true, false])
    func aFamilyOverTheMemberStore(migrates: Bool) async throws {
        let directory = try FamilyWritesTests.KeptDirectory()
        let prefix = migrates ? "ksvmig" : "ksvnomig"
        func feed(_ user: Int) -> String { "\(prefix).u\(user)" }

        // Release 1: every user changes their member.
        do {
            let store = try directory.open()
            let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry, members: store)
            try await hosted.host(family: prefix, P.V1()) { _ in P.V1.State(title: "from the loader") }
            let api = P.api(registry, hosted)
            for user in 0..<Self.users {
                #expect(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"title":"user \#(user)"}"#)).status == .ok)
                #expect(await api.handle(P.request("POST", "/feeds/\(feed(user))/actions/increment")).status == .ok)
            }
            await hosted.stopFamilies()
            store.close()
        }

        // Release 2, on the same store.
        let store = try directory.open()
        defer { store.close() }
        let kept = try (0..<Self.users).map { try #require(try store.read(feed($0))?.viewState) }
        let registry = FeedRegistry(), hosted = HostedFeeds(registry: registry, members: store)
        let loader: @Sendable (FamilyMember<P.V2Migrating>) async throws -> P.V2.State = { _ in P.V2.State(title: "fresh") }
        let api = P.api(registry, hosted)
        if migrates {
            let family = try await hosted.host(family: prefix, P.V2Migrating(), load: loader)
            for user in 0..<Self.users {
                #expect(await api.handle(P.request("GET", "/feeds/\(feed(user))")).status == .ok)
                #expect(try await family.member("u\(user)").state == P.V2.State(title: "user \(user)", count: 1, done: false), "user \(user) keeps their change")
                #expect(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"done":true}"#)).status == .ok)
                let bytes = try #require(try store.read(feed(user))?.viewState)
                #expect(String(decoding: bytes, as: UTF8.self) == #"{"_stateVersion":2,"count":1,"done":true,"title":"user \#(user)"}"#)
            }
            await hosted.stopFamilies()
            return
        }
        let family = try await hosted.host(family: prefix, P.V2()) { _ in P.V2.State(title: "fresh") }
        for user in 0..<Self.users {
            P.expectUnreadable(await api.handle(P.request("GET", "/feeds/\(feed(user))")), feed(user))
            P.expectUnreadable(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"title":"overwritten"}"#)), feed(user))
            P.expectUnreadable(await api.handle(P.request("POST", "/feeds/\(feed(user))/actions/increment")), feed(user))
            P.expectUnreadable(await api.handle(P.request("GET", "/feeds/\(feed(user))/events")), feed(user))
            await #expect(throws: ViewModelError.self) { try await family.update("u\(user)") { $0.title = "by the program" } }
        }
        #expect(await family.liveCount == 0, "no member was made")
        for user in 0..<Self.users {
            #expect(try store.read(feed(user))?.viewState == kept[user], "user \(user)'s bytes stay where they are")
        }
        #expect(await P.unreadableCount(api, #"family="\#(prefix)""#) >= Double(5 * Self.users))

        // The operator resets them deliberately; the plain DELETE of a view model's feed is still refused.
        #expect(await api.handle(P.request("DELETE", "/feeds/\(feed(0))")).status.code == 409)
        #expect(await api.handle(P.request("DELETE", "/feeds/\(feed(0))?reset=everything")).status.code == 422)
        for user in 0..<Self.users {
            #expect(await api.handle(P.request("DELETE", "/feeds/\(feed(user))?reset=kept-state")).status == .noContent)
            #expect(await api.handle(P.request("GET", "/feeds/\(feed(user))")).status == .ok)
            #expect(try await family.member("u\(user)").state == P.V2.State(title: "fresh"), "made afresh by the loader")
            #expect(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"done":true}"#)).status == .ok)
        }
        await hosted.stopFamilies()
    }

    // MARK: Hosted view models over the log store (--data)

    final class LogDirectory: Sendable {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("kept-state-\(UUID().uuidString)").path
        init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(atPath: path) }

        /// The log store and a registry restored from it, as a server's start makes them.
        func open() async throws -> (log: LogFeedStore, registry: FeedRegistry) {
            let log = try LogFeedStore(directory: path)
            let contents = try log.load()
            let registry = FeedRegistry(replayLimit: 4, store: log)
            _ = await registry.restore(contents.feeds)
            return (log, registry)
        }

        /// The view states the store holds, by feed, read by a fresh start.
        func keptStates() throws -> [String: [UInt8]] {
            let log = try LogFeedStore(directory: path)
            defer { log.close() }
            return Dictionary(uniqueKeysWithValues: try log.load().feeds.compactMap { feed in feed.viewState.map { (feed.name, $0) } })
        }
    }

    @Test(arguments: [true, false])
    func hostedViewModelsOverTheLogStore(migrates: Bool) async throws {
        let directory = try LogDirectory()
        func feed(_ user: Int) -> String { "tasks\(user)" }

        do {
            let (log, registry) = try await directory.open()
            let hosted = HostedFeeds(registry: registry)
            let api = P.api(registry, hosted)
            for user in 0..<Self.users {
                try await hosted.host(P.V1(), as: feed(user))
                #expect(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"title":"user \#(user)"}"#)).status == .ok)
            }
            log.close()
        }
        let kept = try directory.keptStates()

        let (log, registry) = try await directory.open()
        let hosted = HostedFeeds(registry: registry)
        let api = P.api(registry, hosted)
        if migrates {
            for user in 0..<Self.users {
                let host = try await hosted.host(P.V2Migrating(), as: feed(user))
                #expect(await host.state == P.V2.State(title: "user \(user)", count: 0, done: false), "feed \(user) keeps its change")
                #expect(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"done":true}"#)).status == .ok)
            }
            log.close()
            let states = try directory.keptStates()
            for user in 0..<Self.users {
                let state = try JSONDecoder().decode(P.V2.State.self, from: Data(try #require(states[feed(user)])))
                #expect(state == P.V2.State(title: "user \(user)", count: 0, done: true))
            }
            return
        }
        var hosts: [ViewModelHost<P.V2>] = []
        for user in 0..<Self.users {
            hosts.append(try await hosted.host(P.V2(), as: feed(user)))  // hosted, refusing: the program still starts
            P.expectUnreadable(await api.handle(P.request("GET", "/feeds/\(feed(user))")), feed(user))
            P.expectUnreadable(await api.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"title":"overwritten"}"#)), feed(user))
            P.expectUnreadable(await api.handle(P.request("POST", "/feeds/\(feed(user))/actions/increment")), feed(user))
            await #expect(throws: ViewModelError.self) { try await hosts[user].update { $0.title = "by the program" } }
        }
        #expect(await P.unreadableCount(api, #"feed="\#(feed(0))""#) >= 1)
        log.close()
        #expect(try directory.keptStates() == kept, "nothing was written")

        let (again, restarted) = try await directory.open()
        defer { again.close() }
        let rehosted = HostedFeeds(registry: restarted)
        let reapi = P.api(restarted, rehosted)
        for user in 0..<Self.users {
            let host = try await rehosted.host(P.V2(), as: feed(user))
            P.expectUnreadable(await reapi.handle(P.request("GET", "/feeds/\(feed(user))")), feed(user))
            #expect(await reapi.handle(P.request("DELETE", "/feeds/\(feed(user))?reset=kept-state")).status == .noContent)
            #expect(await reapi.handle(P.request("GET", "/feeds/\(feed(user))")).status == .ok)
            #expect(await host.state == P.V2.State(), "started again from the initial state")
            #expect(await reapi.handle(P.request("PATCH", "/feeds/\(feed(user))", #"{"done":true}"#)).status == .ok)
        }
    }
}
