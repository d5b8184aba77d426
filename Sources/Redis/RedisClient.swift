import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Redis connection with a thread of its own, for callers on Swift's concurrency pool.
///
/// hiredis's blocking API is driven from a dedicated thread, never from an epoll loop or the pool:
/// each call is queued, the thread runs it on its connection (made on first use, and again after an
/// error broke it) and resumes the caller. Every call has the connection's timeout, so a Redis that
/// hangs fails the call instead of holding the thread. Calls run in the order queued; several clients
/// give several connections.
///
/// ``command(_:)`` calls are pipelined: the thread takes every command queued since its last turn (up
/// to ``maxPipeline``), writes them in one go and reads their answers in order, so commands queued by
/// many tasks at once cost one wake-up, one write and one Redis event-loop turn (one fsync under
/// `appendfsync always`) between them. When the connection breaks, every command of the turn whose
/// answer was not read gets the error (its outcome is unknown: ``RedisError/outcomeUnknown``).
public final class RedisClient: @unchecked Sendable {
    // `@unchecked Sendable`: `queue`, `stopping` and `closed` are read and written only with `condition`
    // held; `connection` is touched only by the client's thread (in `loop()` and the jobs it runs).
    public let url: RedisURL
    public let timeout: Double
    /// The most commands one turn sends before reading answers.
    public static let maxPipeline = 64
    private enum Job {
        /// ``run(_:)``: the connection, or the error that kept it from being made.
        case body((Result<RedisConnection, RedisError>) -> Void)
        /// ``command(_:)``: one command, pipelined with the others queued.
        case command([[UInt8]], (Result<RedisReply, RedisError>) -> Void)
    }
    private let condition = NSCondition()
    private var queue: [Job] = []
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
            enqueue(.body { connection in
                switch connection {
                case .success(let connection): continuation.resume(returning: Result { () throws(RedisError) -> T in try body(connection) })
                case .failure(let error): continuation.resume(returning: .failure(error))
                }
            }, call: "RedisClient.run") { continuation.resume(returning: .failure($0)) }
        }
        return try result.get()
    }

    /// Sends one command, pipelined with the others queued, and returns its answer (a `-ERR` answer
    /// is returned as ``RedisReply/error(_:)``, not thrown).
    public func command(_ arguments: [[UInt8]]) async throws(RedisError) -> RedisReply {
        let result: Result<RedisReply, RedisError> = await withCheckedContinuation { continuation in
            enqueue(.command(arguments) { continuation.resume(returning: $0) }, call: "RedisClient.command") { continuation.resume(returning: .failure($0)) }
        }
        return try result.get()
    }

    /// Sends one command of text arguments.
    public func command(_ arguments: String...) async throws(RedisError) -> RedisReply {
        let bytes = arguments.map { Array($0.utf8) }
        return try await command(bytes)
    }

    private func enqueue(_ job: Job, call: String, orFail fail: (RedisError) -> Void) {
        condition.lock()
        guard !closed else {
            condition.unlock()
            fail(.notConnected(call: call))
            return
        }
        queue.append(job)
        condition.signal()
        condition.unlock()
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
            // A body alone, or every command queued up to the next body (at most maxPipeline).
            var turn: [Job] = []
            if case .body = queue[0] {
                turn = [queue.removeFirst()]
            } else {
                let count = queue.prefix(Self.maxPipeline).prefix { if case .command = $0 { true } else { false } }.count
                turn = Array(queue[..<count])
                queue.removeFirst(count)
            }
            condition.unlock()
            let open: RedisConnection
            do throws(RedisError) {
                if let connection, connection.isOpen {
                    open = connection
                } else {
                    connection = nil
                    open = try RedisConnection(url: url, timeout: timeout)
                    connection = open
                }
            } catch {
                for job in turn {
                    switch job {
                    case .body(let resume): resume(.failure(error))
                    case .command(_, let resume): resume(.failure(error))
                    }
                }
                continue
            }
            if case .body(let resume) = turn[0] {
                resume(.success(open))
            } else {
                Self.pipeline(turn, on: open)
            }
        }
    }

    /// Sends every command of the turn, then reads their answers in order. After an error, every
    /// command whose answer was not read gets it.
    private static func pipeline(_ turn: [Job], on connection: RedisConnection) {
        var answered = 0
        do throws(RedisError) {
            for case .command(let arguments, _) in turn { try connection.append(arguments) }
            for case .command(let arguments, let resume) in turn {
                let reply = try connection.readReply(call: RedisConnection.name(arguments))
                answered += 1
                resume(.success(reply))
            }
        } catch {
            for case .command(_, let resume) in turn.dropFirst(answered) { resume(.failure(error)) }
        }
    }
}
