import CHiredis
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One blocking connection to Redis through hiredis, used by one thread at a time.
///
/// Every call has a timeout: the connect (`redisConnectWithTimeout`), and every read and write after
/// it (`redisSetTimeout`, which sets `SO_RCVTIMEO`/`SO_SNDTIMEO`). A Redis that hangs fails the call
/// with ``RedisError/timedOut(call:seconds:)``. After any error but a server's answer
/// (``RedisError/breaksConnection``), the connection is closed: an answer that arrives late would be
/// taken for the next command's. It is not `Sendable`: ``RedisClient`` and ``RedisSubscriber`` each
/// keep theirs on their own thread. Used on a thread of the caller's, the process must ignore SIGPIPE
/// (`DiffStreamServer`'s `Server` does) or that thread block it (``blockSIGPIPEOnThisThread()``).
public final class RedisConnection {
    private var context: UnsafeMutablePointer<redisContext>?
    public let url: RedisURL
    /// Seconds any one call may take.
    public let timeout: Double

    /// Connects, logs in (`AUTH`) and selects the database.
    public init(url: RedisURL, timeout: Double) throws(RedisError) {
        self.url = url
        self.timeout = timeout
        let tv = Self.timeValue(seconds: timeout)
        guard let context = redisConnectWithTimeout(url.host, Int32(url.port), tv) else {
            throw .connect(endpoint: url.endpoint, reason: "redisConnectWithTimeout could not allocate a context")
        }
        if context.pointee.err != 0 {
            let reason = Self.errorText(context)
            redisFree(context)
            throw .connect(endpoint: url.endpoint, reason: reason)
        }
        self.context = context
        guard redisSetTimeout(context, tv) == REDIS_OK else {
            let reason = Self.errorText(context)
            close()
            throw .connect(endpoint: url.endpoint, reason: "redisSetTimeout: \(reason)")
        }
        do {
            if let password = url.password {
                let args = url.user.map { ["AUTH", $0, password] } ?? ["AUTH", password]
                try expectOK(command(args.map { Array($0.utf8) }), "AUTH")
            }
            if url.database != 0 { try expectOK(command(["SELECT", String(url.database)]), "SELECT") }
        } catch {
            close()
            // An answer (a wrong password, a database past the server's count) is the server's
            // refusal; a lost or silent connection is a connection that could not be made.
            if case .server = error { throw error }
            throw .connect(endpoint: url.endpoint, reason: error.description)
        }
    }

    deinit { close() }

    private func expectOK(_ reply: RedisReply, _ name: String) throws(RedisError) {
        switch reply {
        case .status: return
        case .error(let message): throw .server(command: name, message: message)
        default: throw .unexpectedReply(command: name, reply: reply.description)
        }
    }

    /// True until an error broke the connection or ``close()`` was called.
    public var isOpen: Bool { context != nil }

    /// The socket, for `poll` (the subscriber waits on it).
    public var fileDescriptor: Int32 { context?.pointee.fd ?? -1 }

    /// Closes the socket. Idempotent.
    public func close() {
        if let context { redisFree(context) }
        context = nil
    }

    /// Sends one command and waits for its answer. A `-ERR` answer is returned as
    /// ``RedisReply/error(_:)``, not thrown: the connection stays usable.
    public func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        let command = RedisCommand(arguments)
        try append(command)
        return try readReply(call: command.name)
    }

    /// ``command(_:)`` with text arguments.
    public func command(_ arguments: [String]) throws(RedisError) -> RedisReply {
        try command(arguments.map { Array($0.utf8) })
    }

    /// Sends several commands in one write and reads their answers, in order (pipelining).
    public func pipeline(_ commands: [[[UInt8]]]) throws(RedisError) -> [RedisReply] {
        let laidOut = commands.map(RedisCommand.init)
        for command in laidOut { try append(command) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(laidOut.count)
        for command in laidOut { replies.append(try readReply(call: command.name)) }
        return replies
    }

    /// Queues a command in the output buffer (nothing is sent until a reply is read or ``flush()``).
    public func append(_ arguments: [[UInt8]]) throws(RedisError) {
        try append(RedisCommand(arguments))
    }

    /// Queues a command laid out as RESP (``RedisCommand``), handed to hiredis as formatted
    /// (`redisAppendFormattedCommand`): hiredis's own formatting of an argument vector cost about
    /// 17,000 instructions for a 2 kB commit, this about a tenth.
    public func append(_ command: RedisCommand) throws(RedisError) {
        guard let context else { throw .notConnected(call: command.name) }
        let status = command.resp.withUnsafeBufferPointer { buffer in
            redisAppendFormattedCommand(context, UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self), buffer.count)
        }
        guard status == REDIS_OK else { throw fail(call: "redisAppendFormattedCommand") }
    }

    /// Writes everything queued by ``append(_:)`` without waiting for answers.
    /// - Parameter call: what an error names (the command whose bytes are written, say).
    public func flush(call: @autoclosure () -> String = "redisBufferWrite") throws(RedisError) {
        guard let context else { throw .notConnected(call: call()) }
        var done: Int32 = 0
        while done == 0 {
            guard redisBufferWrite(context, &done) == REDIS_OK else { throw fail(call: call()) }
        }
    }

    /// Waits (at most the timeout) for the next answer: a command's, or a pub/sub message.
    public func readReply(call: String = "redisGetReply") throws(RedisError) -> RedisReply {
        guard let context else { throw .notConnected(call: call) }
        var raw: UnsafeMutableRawPointer?
        guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw fail(call: call) }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// An answer already read from the socket, if a whole one is buffered; nil otherwise. Never blocks.
    /// - Parameter call: what an error names (the command whose answer is awaited, say).
    public func bufferedReply(call: @autoclosure () -> String = "redisGetReplyFromReader") throws(RedisError) -> RedisReply? {
        guard let context else { throw .notConnected(call: call()) }
        var raw: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &raw) == REDIS_OK else { throw fail(call: call()) }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Reads what the socket has into hiredis's buffer (call after `poll` says it is readable).
    /// - Parameter call: what an error names (the command whose answer is awaited, say).
    public func readAvailable(call: @autoclosure () -> String = "redisBufferRead") throws(RedisError) {
        guard let context else { throw .notConnected(call: call()) }
        guard redisBufferRead(context) == REDIS_OK else { throw fail(call: call()) }
    }

    /// Turns the context's error into a ``RedisError`` (naming `call`, evaluated after errno is read) and
    /// closes the connection.
    private func fail(call name: @autoclosure () -> String) -> RedisError {
        let code = errno  // before anything else can change it
        let call = name()
        guard let context else { return .notConnected(call: call) }
        let error: RedisError
        switch context.pointee.err {
        case REDIS_ERR_IO where code == EAGAIN || code == EWOULDBLOCK || code == ETIMEDOUT: error = .timedOut(call: call, seconds: timeout)
        case REDIS_ERR_IO: error = .io(call: call, errno: code, reason: Self.errorText(context))
        case REDIS_ERR_EOF: error = .closed(call: call)
        case REDIS_ERR_PROTOCOL: error = .protocolError(call: call, reason: Self.errorText(context))
        default: error = .io(call: call, errno: code, reason: Self.errorText(context))
        }
        close()
        return error
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { raw in
            let bytes = raw.prefix(while: { $0 != 0 })
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// hiredis writes with `write(2)`: to a socket the server has reset, that raises SIGPIPE, which ends
    /// the process unless it is ignored (`DiffStreamServer`'s `Server` ignores it) or blocked. The client's and the
    /// subscriber's threads block it, so the write fails with `EPIPE` instead, whatever the program does.
    /// (A signal raised by a write is sent to the thread that wrote, so blocking it there is enough.)
    public static func blockSIGPIPEOnThisThread() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    static func timeValue(seconds: Double) -> timeval {
        let micro = Int(max(0.001, seconds) * 1_000_000)
        return timeval(tv_sec: micro / 1_000_000, tv_usec: micro % 1_000_000)
    }
}
