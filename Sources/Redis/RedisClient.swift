import CThreads
import Foundation
import Synchronization
import Timekeeping
#if canImport(Glibc)
import Glibc
#endif

/// A Redis connection with a thread of its own, for callers on Swift's concurrency pool.
///
/// hiredis's blocking API is driven from a dedicated thread, never from an epoll loop or the pool:
/// each call is queued, the thread runs it on its connection (made on first use, and again after an
/// error broke it) and resumes the caller. Calls run in the order queued; several clients give
/// several connections.
///
/// ``command(_:)`` calls are pipelined, full duplex: the thread writes every command queued (up to
/// ``maxPipeline`` per write) as soon as it is woken, without waiting for the answers of those already
/// sent, and hands each answer to its caller as it arrives. Commands queued by many tasks at once
/// cost one wake-up and one write between them, and Redis batches what reaches it during one of its
/// event-loop turns (one fsync under `appendfsync always`), so the client never holds a command back
/// for a round trip. A ``run(_:)`` body waits until every answer is in, then has the connection alone.
///
/// Every call has the connection's timeout: a Redis that sends no answer for that long while some
/// are awaited fails them (``RedisError/timedOut(call:seconds:)``) instead of holding the thread. When
/// the connection breaks, every command whose answer was not read gets the error (its outcome is
/// unknown: ``RedisError/outcomeUnknown``), named for the oldest of them.
public final class RedisClient: @unchecked Sendable {
    // `@unchecked Sendable`: `connection`, `inFlight` and `lastHeard` are touched only by the client's
    // thread (in `loop()` and the jobs it runs); what callers share with it is in `shared`, a `Mutex`;
    // `wakePipe` is set once and is `Sendable`.
    public let url: RedisURL
    public let timeout: Double
    /// The most commands one write sends (more queued go out in the writes that follow at once).
    public static let maxPipeline = 64
    /// A call queued (`Sendable`: made by the caller, run by the client's thread).
    private enum Job: Sendable {
        /// ``run(_:)``: the connection, or the error that kept it from being made.
        case body(@Sendable (Result<RedisConnection, RedisError>) -> Void)
        /// ``command(_:)``: one command, pipelined with the others queued.
        case command(RedisCommand, @Sendable (Result<RedisReply, RedisError>) -> Void)
    }
    /// A command sent whose answer is awaited (its name for errors) and its caller.
    private typealias Sent = (command: RedisCommand, resume: @Sendable (Result<RedisReply, RedisError>) -> Void)
    /// What the callers and the client's thread share.
    private struct Shared {
        var queue: [Job] = []
        var stopping = false
        var closed = false
        /// The thread found the queue empty and polls (or is about to): the next call must wake it.
        var asleep = false
    }
    private let shared = Mutex(Shared())
    private let wakePipe = WakePipe()
    private var connection: RedisConnection?
    private var inFlight: [Sent] = []
    /// When an answer last arrived, or the first of those awaited was sent (the monotonic clock).
    private var lastHeard = 0.0
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts the thread; the connection is made by the first call. The thread keeps the client alive
    /// until ``stop()``.
    /// - Parameter timeout: seconds each connect and write may take, and the longest silence while
    ///   answers are awaited.
    /// - Parameter name: the thread's name (`top -H`, `/proc/PID/task/TID/comm`: at most 15 bytes show).
    public init(url: RedisURL, timeout: Double = 2, name: String = "redis") {
        self.url = url
        self.timeout = timeout
        let thread = Thread { [self] in
            diffstream_name_this_thread(name)
            loop()
        }
        thread.start()
    }

    /// Runs `body` on the client's thread with its connection, once every command queued before it
    /// is answered, and returns what it returns. A connection an error broke is closed and made again
    /// by the next call.
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
        try await command(RedisCommand(arguments))
    }

    /// Sends one command laid out as RESP (``RedisCommand``), pipelined with the others queued, and
    /// returns its answer (a `-ERR` answer is returned as ``RedisReply/error(_:)``, not thrown).
    public func command(_ command: RedisCommand) async throws(RedisError) -> RedisReply {
        let result: Result<RedisReply, RedisError> = await withCheckedContinuation { continuation in
            enqueue(.command(command) { continuation.resume(returning: $0) }, call: "RedisClient.command") { continuation.resume(returning: .failure($0)) }
        }
        return try result.get()
    }

    /// Sends one command of text arguments.
    public func command(_ arguments: String...) async throws(RedisError) -> RedisReply {
        let bytes = arguments.map { Array($0.utf8) }
        return try await command(bytes)
    }

    private func enqueue(_ job: Job, call: String, orFail fail: (RedisError) -> Void) {
        // nil: closed (the caller is failed after the lock is let go, as before).
        let wake = shared.withLock { shared -> Bool? in
            guard !shared.closed else { return nil }
            shared.queue.append(job)
            let wake = shared.asleep
            shared.asleep = false
            return wake
        }
        guard let wake else {
            fail(.notConnected(call: call))
            return
        }
        if wake { wakePipe.wake() }
    }

    /// Finishes the calls already queued and the answers awaited, closes the connection and stops the
    /// thread; later calls fail with ``RedisError/notConnected(call:)``. Idempotent.
    public func stop() {
        let first = shared.withLock { shared -> Bool in
            guard !shared.closed else { return false }
            shared.closed = true
            shared.stopping = true
            return true
        }
        guard first else { return }
        wakePipe.wake()
        stopped.wait()
        wakePipe.close()
    }

    /// What the thread does next.
    private enum Turn {
        /// Commands to write now, whatever answers are awaited.
        case send([Job])
        /// A body, to run once no answer is awaited.
        case body(Job)
        /// Nothing queued: wait for answers or a wake-up.
        case wait
        /// Stopping, nothing queued and nothing awaited.
        case finish
    }

    private func loop() {
        RedisConnection.blockSIGPIPEOnThisThread()
        var body: Job?
        while true {
            if let job = body {
                // A body has the connection alone: every answer awaited comes in first.
                if !inFlight.isEmpty { awaitAnswers(wakeable: false); continue }
                body = nil
                guard let open = open(failing: [job]), case .body(let resume) = job else { continue }
                resume(.success(open))
                continue
            }
            switch nextTurn() {
            case .finish:
                connection?.close()
                connection = nil
                stopped.signal()
                return
            case .wait:
                awaitAnswers(wakeable: true)
            case .body(let job):
                body = job
            case .send(let jobs):
                guard let open = open(failing: jobs) else { continue }
                send(jobs, on: open)
            }
        }
    }

    /// Takes the next turn from the queue: a body alone, or the commands queued up to the next body
    /// (at most ``maxPipeline``). With nothing queued the thread is marked asleep, so the next call
    /// wakes it.
    private func nextTurn() -> Turn {
        let idle = inFlight.isEmpty  // the thread's own: read before taking the lock
        return shared.withLock { shared in
            guard !shared.queue.isEmpty else {
                if shared.stopping && idle { return .finish }
                shared.asleep = true
                return .wait
            }
            if case .body = shared.queue[0] { return .body(shared.queue.removeFirst()) }
            let count = shared.queue.prefix(Self.maxPipeline).prefix { if case .command = $0 { true } else { false } }.count
            defer { shared.queue.removeFirst(count) }
            return .send(Array(shared.queue[..<count]))
        }
    }

    /// The open connection, made if there is none; nil after failing every job with the error that
    /// kept it from being made. (A broken connection has no answers awaited: they failed with it.)
    private func open(failing jobs: [Job]) -> RedisConnection? {
        if let connection, connection.isOpen { return connection }
        connection = nil
        do throws(RedisError) {
            let made = try RedisConnection(url: url, timeout: timeout)
            connection = made
            return made
        } catch {
            for job in jobs {
                switch job {
                case .body(let resume): resume(.failure(error))
                case .command(_, let resume): resume(.failure(error))
                }
            }
            return nil
        }
    }

    /// Writes the commands in one go; their answers are awaited with those already in flight. An
    /// error fails them all, and every answer awaited (the connection is broken).
    private func send(_ jobs: [Job], on connection: RedisConnection) {
        if inFlight.isEmpty { lastHeard = MonotonicClock.now() }
        for case .command(let command, let resume) in jobs { inFlight.append((command, resume)) }
        do throws(RedisError) {
            for case .command(let command, _) in jobs { try connection.append(command) }
            try connection.flush(call: oldestName)
        } catch {
            failInFlight(error)
        }
    }

    /// Waits for answers (and, when `wakeable`, for a call queued meanwhile), and hands every whole
    /// answer read to its caller in order. Nothing heard for the timeout fails every answer awaited.
    private func awaitAnswers(wakeable: Bool) {
        guard let connection, connection.isOpen, !inFlight.isEmpty else {
            if wakeable { _ = wakePipe.poll(-1, seconds: nil) }
            return
        }
        let left = timeout - (MonotonicClock.now() - lastHeard)
        // After a stall of this process (a paused VM, a loaded machine) an answer may be buffered
        // already: a timeout is declared only when the socket has nothing either.
        let ready = wakePipe.poll(connection.fileDescriptor, seconds: max(0, left))
        guard ready.socket else {
            if !ready.wake, MonotonicClock.now() - lastHeard >= timeout {
                connection.close()
                failInFlight(.timedOut(call: oldestName, seconds: timeout))
            }
            return
        }
        var answered = 0
        defer { inFlight.removeFirst(answered) }
        do throws(RedisError) {
            try connection.readAvailable(call: oldestName)
            while answered < inFlight.count, let reply = try connection.bufferedReply(call: inFlight[answered].command.name) {
                lastHeard = MonotonicClock.now()
                inFlight[answered].resume(.success(reply))
                answered += 1
            }
        } catch {
            let failed = inFlight[answered...]
            answered = inFlight.count
            for sent in failed { sent.resume(.failure(error)) }
        }
    }

    /// Fails every answer awaited with `error` (the connection is closed).
    private func failInFlight(_ error: RedisError) {
        let failed = inFlight
        inFlight = []
        for sent in failed { sent.resume(.failure(error)) }
    }

    /// The name of the oldest command awaiting its answer, for errors.
    private var oldestName: String { inFlight.first?.command.name ?? "(empty command)" }
}
