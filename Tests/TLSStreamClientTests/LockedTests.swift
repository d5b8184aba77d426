import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TLSStreamClient

/// The connection state's lock (`Locked`, NSLock: the declared platforms predate `Synchronization.Mutex`).
struct LockedTests {
    /// Increments from many tasks at once are none of them lost.
    @Test func concurrentUpdatesAreSerialised() async {
        let counter = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<1_000 { counter.withLock { $0 += 1 } } }
            }
        }
        #expect(counter.withLock { $0 } == 8_000)
    }

    /// A cancel made before the connection's thread runs is seen through the lock: nothing is reported.
    @Test func cancelBeforeRunReportsNothing() throws {
        let connection = SocketConnection(report: { event in Issue.record("reported after a cancel: \(event)") })
        connection.cancel()
        let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:9/feeds/a/events")))
        connection.run(target: StreamTarget(request), tls: try TLSClientContext(caFile: nil, insecure: true), connectTimeout: 1, readTimeout: 1)
    }
}
