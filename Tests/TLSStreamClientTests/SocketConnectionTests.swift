import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSStreamClient

/// The connection state that `cancel` (any thread) and the connection's thread share (a `Mutex`).
struct SocketConnectionTests {
    /// A cancel made before the connection's thread runs is seen through the lock: nothing is reported.
    @Test func cancelBeforeRunReportsNothing() throws {
        let connection = SocketConnection(report: { event in Issue.record("reported after a cancel: \(event)") })
        connection.cancel()
        let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:9/feeds/a/events")))
        connection.run(target: StreamTarget(request), tls: try TLSClientContext(caFile: nil, insecure: true), connectTimeout: 1, readTimeout: 1)
    }
}
