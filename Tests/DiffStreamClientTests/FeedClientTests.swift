import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
@testable import DiffStreamClient

struct FeedClientTests {
    /// The multi-feed URL: each feed with its position, `@` as `%40`, in the order listed.
    @Test func multiFeedURL() throws {
        let client = FeedClient(baseURL: URL(string: "http://127.0.0.1:8080/")!)
        let request = StreamRequest(path: "/events", query: [QueryParameter(name: "feed", value: "home@ds1.9f86d081884c7d65.7"),
                                                             QueryParameter(name: "feed", value: "week")], lastEventID: nil, token: "t")
        let urlRequest = try #require(client.urlRequest(for: request))
        #expect(urlRequest.url?.absoluteString == "http://127.0.0.1:8080/events?feed=home%40ds1.9f86d081884c7d65.7&feed=week")
        #expect(urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer t")
    }

    /// A 422's field comes from the server's `invalid field` detail (`FIELD: REASON`).
    @Test(arguments: [
        (422, #"{"error":"invalid field","detail":"title: expected 1 to 200 characters, not 0"}"#, "invalidInput title"),
        (422, #"{"error":"render failed","detail":"duplicate id"}"#, "invalidInput -"),
        (404, #"{"error":"not found","detail":"no action x"}"#, "notFound"),
        (403, #"{"error":"forbidden","detail":"d"}"#, "forbidden"),
        (500, "oops", "refused"),
    ])
    func actionErrors(_ status: Int, _ body: String, _ expected: String) {
        let error = FeedClient.actionError(status: status, body: Array(body.utf8), feed: "todo")
        let kind: String = switch error {
        case .invalidInput(let field, _, _): "invalidInput \(field ?? "-")"
        case .notFound: "notFound"
        case .forbidden: "forbidden"
        case .unauthorized: "unauthorized"
        case .refused: "refused"
        case .unreachable, .encoding: "other"
        }
        #expect(kind == expected)
    }

    /// The offline cache is keyed by the token's subject; a file of another format is ignored.
    @Test func offlineCacheKeysAndFormat() throws {
        let payload = Data(#"{"sub":"user-42"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        #expect(OfflineCache.subject(of: "e30.\(payload).sig") == "sub:user-42")
        #expect(OfflineCache.subject(of: "admin") == "token")
        #expect(OfflineCache.subject(of: nil) == "anonymous")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-cache-\(UUID().uuidString)")
        let server = URL(string: "http://example.com")!
        let cache = OfflineCache(directory: directory, server: server, token: nil)
        var cursor = FeedCursor()
        _ = cursor.receiveSnapshot(try FeedCursorTests.snapshot(#"{"sections":[{"id":"s","items":[]}]}"#), history: "h", version: 2, eventID: "ds1.h.2")
        cache.save(feed: "news", cursor: cursor)
        let loaded = try #require(cache.load(feed: "news"))
        #expect(loaded.isStale && loaded.version == 2 && loaded.eventID == "ds1.h.2" && loaded.history == "h")
        #expect(OfflineCache(directory: directory, server: server, token: "other").load(feed: "news") == nil)  // another subject
        let text = try String(contentsOf: cache.file(for: "news"), encoding: .utf8)
        try text.replacingOccurrences(of: #""format":1"#, with: #""format":2"#).write(to: cache.file(for: "news"), atomically: true, encoding: .utf8)
        #expect(cache.load(feed: "news") == nil)
    }

    /// A JWT-shaped token of a subject (only `sub` matters: the cache key does not verify it).
    static func token(subject: String) -> String {
        let payload = Data(#"{"sub":"\#(subject)"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        return "e30.\(payload).sig"
    }

    /// Streams a snapshot to requests with the accepted token; to any other, a stream that says the
    /// token expired (with a short `retry:`, so the fresh token is used within milliseconds).
    final class TokenCheckingTransport: FeedStreamTransport {
        let accepted: String
        let tokens = Mutex<[String]>([])
        init(accepted: String) { self.accepted = accepted }

        struct Connection: FeedStreamConnection {
            func cancel() {}
        }

        func open(_ request: URLRequest, report: @escaping @Sendable (TransportEvent) -> Void) -> any FeedStreamConnection {
            let authorization = request.value(forHTTPHeaderField: "Authorization") ?? ""
            tokens.withLock { $0.append(authorization) }
            report(.response(status: 200))
            if authorization == "Bearer \(accepted)" {
                report(.bytes(Array(StreamMachineTests.snapshot7.utf8)))
            } else {
                report(.bytes(Array("retry: 10\n\nevent: unauthorized\ndata: {\"feed\":\"home\",\"error\":\"token expired\",\"detail\":\"d\"}\n\n".utf8)))
                report(.finished(error: nil))
            }
            return Connection()
        }
    }

    /// The token hook signs in another user: the updates that follow are cached under that user's
    /// subject, never under the first one's.
    @Test func offlineCacheFollowsTheTokensSubject() async throws {
        let first = Self.token(subject: "user-1"), second = Self.token(subject: "user-2")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("client-cache-\(UUID().uuidString)")
        let server = URL(string: "https://example.invalid")!
        let transport = TokenCheckingTransport(accepted: second)
        var client = FeedClient(baseURL: server, token: first, cacheDirectory: directory, tokenHook: { _ in second })
        client.streamTransport = transport
        for try await event in client.updates(of: "home") {
            if case .update = event { break }
        }
        #expect(transport.tokens.withLock { $0 } == ["Bearer \(first)", "Bearer \(second)"])
        #expect(OfflineCache(directory: directory, server: server, token: second).load(feed: "home")?.version == 7)
        #expect(OfflineCache(directory: directory, server: server, token: first).load(feed: "home") == nil)
        #expect(OfflineCache(directory: directory, server: server, token: first).keyed(for: second).subject == "sub:user-2")
    }
}
