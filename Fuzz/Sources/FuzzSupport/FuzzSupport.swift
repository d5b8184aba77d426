import Dispatch
import DiffStreamExamples
import FeedServer
import EpollRuntime

/// Helpers the fuzz targets share.
public enum FuzzSupport {
    /// Stops the run (libFuzzer records the input) when an invariant does not hold.
    public static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz invariant failed: \(message())") }
    }

    /// Runs an async function to completion from libFuzzer's synchronous callback.
    public static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await body()
            done.signal()
        }
        done.wait()
        return box.value!
    }

    /// A `FeedAPI` with the example view models and no sockets (its server is nil), created once.
    public static let api: FeedAPI = blocking {
        let registry = FeedRegistry()
        let hosted = HostedFeeds(registry: registry)
        _ = try? await Examples.host(Examples.names, on: hosted, demo: false)
        return FeedAPI(registry: registry, hosted: hosted, files: nil, options: .init(), serverMetrics: { nil })
    }

    /// Sends one request through the API's handler and checks the answer is a well-formed status.
    @discardableResult
    public static func handle(_ request: HTTPRequest) -> HTTPResponse {
        let response = blocking { await api.handle(request) }
        check((200...599).contains(response.status.code), "status \(response.status.code)")
        return response
    }
}

/// Carries a value out of a task; the semaphore orders the write before the read.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
