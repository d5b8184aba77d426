/// Why a call to Redis failed. Every case names the call (a hiredis function, or the Redis command)
/// and keeps what the system or the server said.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The connection could not be made (`redisConnectWithTimeout`, `redisSetTimeout`). A handshake
    /// the server refused (`AUTH`, `SELECT`) is ``server(command:message:)``: trying again does not help.
    case connect(endpoint: String, reason: String)
    /// A read or write failed (`call`: the hiredis function), with the system's errno.
    case io(call: String, errno: Int32, reason: String)
    /// No answer within the timeout: the Redis hangs, or the network does.
    case timedOut(call: String, seconds: Double)
    /// The server closed the connection.
    case closed(call: String)
    /// The bytes read were not RESP.
    case protocolError(call: String, reason: String)
    /// The server answered the command with an error (`-ERR …`, `-NOSCRIPT …`, `-BUSY …`).
    case server(command: String, message: String)
    /// The answer had a shape the caller did not expect.
    case unexpectedReply(command: String, reply: String)
    /// The connection was closed by this process (the client stopped).
    case notConnected(call: String)

    /// True when a command may have reached the server although its answer did not come back: the
    /// write it carried may or may not have happened, and must be read back, never guessed.
    public var outcomeUnknown: Bool {
        switch self {
        case .io, .timedOut, .closed, .protocolError: true
        case .connect, .server, .unexpectedReply, .notConnected: false
        }
    }

    /// True for an error answer that says the server cannot serve now but will: `LOADING` (it replays
    /// its AOF after a restart), `BUSY` (a script runs too long), `MASTERDOWN`, `READONLY` (a replica,
    /// during a failover), `NOREPLICAS`, `TRYAGAIN`. Nothing ran; the same call can succeed later.
    public var temporarilyRefused: Bool {
        guard case .server(_, let message) = self else { return false }
        return ["LOADING", "BUSY", "MASTERDOWN", "READONLY", "NOREPLICAS", "TRYAGAIN"].contains { message.hasPrefix($0 + " ") || message == $0 }
    }

    /// True for Redis's `OOM` answer: its memory reached `maxmemory`, and under `noeviction` it refuses
    /// commands that could grow it (and scripts that call one before any other write). Nothing ran.
    public var outOfMemory: Bool {
        guard case .server(_, let message) = self else { return false }
        return message.hasPrefix("OOM ") || message == "OOM"
    }

    /// True when the connection is broken after this error (anything but an answer from the server).
    public var breaksConnection: Bool {
        switch self {
        case .server, .unexpectedReply: false
        default: true
        }
    }

    public var description: String {
        switch self {
        case .connect(let endpoint, let reason): "cannot connect to Redis at \(endpoint): \(reason)"
        case .io(let call, let errno, let reason): "Redis I/O failed in \(call): \(reason) (errno \(errno))"
        case .timedOut(let call, let seconds): "Redis did not answer \(call) within \(seconds) s"
        case .closed(let call): "Redis closed the connection during \(call)"
        case .protocolError(let call, let reason): "Redis sent something that is not RESP during \(call): \(reason)"
        case .server(let command, let message): "Redis refused \(command): \(message)"
        case .unexpectedReply(let command, let reply): "Redis answered \(command) with \(reply), which was not expected"
        case .notConnected(let call): "\(call): the Redis connection is closed"
        }
    }
}
