import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSStreamClient

/// The request head the transport writes: `GET` with the path and query as given, `Host` (the port
/// only when not the scheme's, an IPv6 address in brackets), the request's fields, no `Accept-Encoding`.
struct StreamTargetTests {
    @Test(arguments: [
        ("https://example.com/feeds/a%40b/events?x=1&y=%2F", "example.com", 443, "GET /feeds/a%40b/events?x=1&y=%2F HTTP/1.1\r\nHost: example.com\r\n"),
        ("http://127.0.0.1:8080/events", "127.0.0.1", 80, "GET /events HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
        ("http://[::1]:9000", "::1", 80, "GET / HTTP/1.1\r\nHost: [::1]:9000\r\n"),
    ])
    func head(_ url: String, _ host: String, _ defaultPort: Int, _ start: String) throws {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
        request.setValue("ds1.x.3", forHTTPHeaderField: "Last-Event-ID")
        let target = StreamTarget(request)
        #expect(target.host == host)
        let head = String(decoding: target.head(host: host, port: target.port ?? defaultPort, defaultPort: defaultPort), as: UTF8.self)
        #expect(head.hasPrefix(start))
        // Field names are case-insensitive (Foundation writes `Last-Event-Id`).
        #expect(head.lowercased().contains("\r\naccept: text/event-stream\r\n"))
        #expect(head.lowercased().contains("\r\nlast-event-id: ds1.x.3\r\n"))
        #expect(!head.lowercased().contains("accept-encoding"))
        #expect(head.hasSuffix("\r\nConnection: close\r\n\r\n"))
    }
}
