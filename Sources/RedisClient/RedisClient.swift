import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Redis connection with a thread of its own, for callers on Swift's concurrency pool.
///
/// hiredis's blocking API is driven from a dedicated thread, never from an epoll loop or the pool:
/// each ``run(_:)`` is queued, the thread runs it on its connection (made on first use, and again after
/// an error broke it) and resumes the caller. Every call has the connection's timeout, so a Redis that
/// hangs fails the call instead of holding the thread. Calls run one at a time, in the order queued;
/// several clients give several connections.
public final class RedisClient: @unchecked Sendable {
    // `@unchecked Sendable`: `queue`, `stopping` and `closed` are read and written only with `condition`
    // held; `connection` is touched only by the client's thread (in `run()` and the jobs it runs).
    public let url: RedisURL
    public let timeout: Double
    private let condition = NSCondition()
    /// Each job gets the connection, or the error that kept it from being made.
    private var queue: [(Result<RedisConnection, RedisError>) -> Void] = []
    private var stopping = false
    private var closed = false
    private var connection: RedisConnection?
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts the thread; the connection is made by the first call. The thread keeps the client alive
    /// until ``stop()``.
    /// - Parameter timeout: seconds each connect, read and write may take.
    public init(url: RedisURL, timeout: Double = 2, name: String = "redis") {
        self.url = url
        self.timeout = timeout
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the client's thread with its connection, and returns what it returns. A
    /// connection an error broke is closed and made again by the next call.
    public func run<T: Sendable>(_ body: @escaping @Sendable (RedisConnection) throws(RedisError) -> T) async throws(RedisError) -> T {
        let result: Result<T, RedisError> = await withCheckedContinuation { continuation in
            condition.lock()
            guard !closed else {
                condition.unlock()
                continuation.resume(returning: .failure(.notConnected(call: "RedisClient.run")))
                return
            }
            queue.append { connection in
                switch connection {
                case .success(let connection): continuation.resume(returning: Result { () throws(RedisError) -> T in try body(connection) })
                case .failure(let error): continuation.resume(returning: .failure(error))
                }
            }
            condition.signal()
            condition.unlock()
        }
        return try result.get()
    }

    /// Sends one command (``RedisConnection/command(_:)``).
    public func command(_ arguments: [[UInt8]]) async throws(RedisError) -> RedisReply {
        try await run { connection throws(RedisError) in try connection.command(arguments) }
    }

    /// Sends one command of text arguments.
    public func command(_ arguments: String...) async throws(RedisError) -> RedisReply {
        let bytes = arguments.map { Array($0.utf8) }
        return try await command(bytes)
    }

    /// Finishes the calls already queued, closes the connection and stops the thread; later calls
    /// fail with ``RedisError/notConnected(call:)``. Idempotent.
    public func stop() {
        condition.lock()
        guard !closed else { condition.unlock(); return }
        closed = true
        stopping = true
        condition.signal()
        condition.unlock()
        stopped.wait()
    }

    private func loop() {
        RedisConnection.blockSIGPIPEOnThisThread()
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty {
                condition.unlock()
                connection?.close()
                connection = nil
                stopped.signal()
                return
            }
            let job = queue.removeFirst()
            condition.unlock()
            if let open = connection, open.isOpen {
                job(.success(open))
            } else {
                do throws(RedisError) {
                    let made = try RedisConnection(url: url, timeout: timeout)
                    connection = made
                    job(.success(made))
                } catch {
                    connection = nil
                    job(.failure(error))
                }
            }
        }
    }
}
