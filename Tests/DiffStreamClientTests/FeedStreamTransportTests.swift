import DiffStream
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

    /// Typed and untyped sequences both carry the outage events, in order with the updates.
    @Test func outageEventsReachTypedAndUntypedSequences() async throws {
        let transport = ScriptedTransport(body: """
            event: snapshot\nid: ds1.aaaa.7\ndata: {"feed":"home","history":"aaaa","version":7,"sections":[{"id":"s","model":null,"items":[{"id":"b","kind":"banner","model":{"title":"Hi"}}]}]}\n\n\
            event: unavailable\ndata: {"feed":"home","detail":"redis down"}\n\n\
            event: available\ndata: {"feed":"home"}\n\n
            """)
        var client = FeedClient(baseURL: URL(string: "https://example.invalid")!)
        client.streamTransport = transport
        var typed: [String] = []
        for try await event in client.snapshots(of: "home", as: Snapshot<HomeSection, HomeItem>.self) {
            switch event {
            case .update(let update): typed.append("update:\(update.version)")
            case .unavailable(let feed, let detail): typed.append("unavailable:\(feed):\(detail)")
            case .available(let feed): typed.append("available:\(feed)")
            default: continue
            }
            if typed.count == 3 { break }
        }
        #expect(typed == ["update:7", "unavailable:home:redis down", "available:home"])
        var wire: [String] = []
        for try await event in client.updates(of: "home") {
            if case .unavailable(let feed, _) = event { wire.append(feed) }
            if case .available(let feed) = event { wire.append(feed); break }
        }
        #expect(wire == ["home", "home"])
    }
}
