import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import DiffStreamClient

/// The transport seam: a `FeedClient` given a transport of its own opens its streams there (no sockets).
struct FeedStreamTransportTests {
    /// Answers every request with `200` and a fixed SSE body, and remembers the requests.
    final class ScriptedTransport: FeedStreamTransport {
        let requests = Mutex<[URLRequest]>([])
        let body: [UInt8]
        init(body: String) { self.body = Array(body.utf8) }

        struct Connection: FeedStreamConnection {
            func cancel() {}
        }

        func open(_ request: URLRequest, report: @escaping @Sendable (TransportEvent) -> Void) -> any FeedStreamConnection {
            requests.withLock { $0.append(request) }
            report(.response(status: 200))
            report(.bytes(body))
            return Connection()
        }
    }

    @Test func streamsGoThroughTheInjectedTransport() async throws {
        let transport = ScriptedTransport(body: """
            event: snapshot\nid: ds1.aaaa.7\ndata: {"feed":"home","history":"aaaa","version":7,"sections":[{"id":"s","model":null,"items":[{"id":"a","kind":"k","model":1}]}]}\n\n
            """)
        var client = FeedClient(baseURL: URL(string: "https://example.invalid/base")!, token: "t")
        client.streamTransport = transport
        var version: Int?
        for try await event in client.updates(of: "home") {
            if case .update(let update) = event {
                version = update.version
                break
            }
        }
        #expect(version == 7)
        let request = try #require(transport.requests.withLock { $0.first })
        #expect(request.url?.absoluteString == "https://example.invalid/base/feeds/home/events")
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer t")
        #expect(request.value(forHTTPHeaderField: "Accept") == "text/event-stream")
    }
}
