import CThreads
import Foundation
import Synchronization
import Timekeeping
#if canImport(Glibc)
import Glibc
#endif

/// Pub/sub on a connection of its own, with a thread of its own that waits on the socket.
///
/// The thread `poll`s the connection and a wake-up pipe: messages are handed to `onEvent` as they
/// arrive; channels added or removed from any thread are sent as one `SUBSCRIBE`/`UNSUBSCRIBE`
/// (pipelined, not waited for). A connection that says nothing for `pingInterval` gets a `PING`
/// (allowed while subscribed); no answer within the timeout, an error, or the server closing it ends
/// the connection: `onEvent(.disconnected)`, then it connects again (every `reconnectDelay` until it
/// can) and subscribes to every channel again. Messages published while it was away are not sent
/// again by Redis, so ``Event/subscribed`` tells the caller to check the position of everything it
/// follows (the history stream has what was missed).
public final class RedisSubscriber: @unchecked Sendable {
    // `@unchecked Sendable`: `subscribed` is touched only by the subscriber's thread (the connection is
    // its own local); what other threads change is in `shared`, a `Mutex`; `wakePipe` and `origin` are
    // set once in `init` (the pipe is `Sendable`).
    public enum Event: Sendable, Equatable {
        /// Connected (again), and every channel wanted is subscribed: what was published from now on
        /// will arrive. Check the position of every feed followed: messages may have been missed.
        case subscribed
        /// Redis confirmed a `SUBSCRIBE` of the channel (also after a reconnect): whatever is published
        /// on it from now on arrives. What was published before may not have: read the position then.
        case confirmed(channel: String)
        /// A message on a channel.
        case message(channel: String, payload: [UInt8])
        /// The connection was lost or could not be made; it is tried again.
        case disconnected(RedisError)
    }

    public let url: RedisURL
    public let timeout: Double
    public let pingInterval: Double
    public let reconnectDelay: Double
    private let onEvent: @Sendable (Event) -> Void
    /// What any thread changes and the subscriber's thread reads.
    private struct Shared {
        var wanted: Set<String> = []
        var stopping = false
    }
    private let shared = Mutex(Shared())
    private var subscribed: Set<String> = []
    private let wakePipe = WakePipe()
    private let stopped = DispatchSemaphore(value: 0)
    private let origin = MonotonicClock.now()

    /// Starts the thread, which connects at once.
    /// - Parameters:
    ///   - timeout: seconds each connect, write and awaited answer (a `PING`'s) may take.
    ///   - pingInterval: seconds of silence after which the connection is checked with a `PING`.
    ///   - reconnectDelay: seconds between attempts to connect while Redis cannot be reached.
    ///   - name: the thread's name (`top -H`, `/proc/PID/task/TID/comm`: at most 15 bytes show).
    public init(url: RedisURL, timeout: Double = 2, pingInterval: Double = 1, reconnectDelay: Double = 1, name: String = "redis-pubsub",
                onEvent: @escaping @Sendable (Event) -> Void) {
        self.url = url
        self.timeout = timeout
        self.pingInterval = pingInterval
        self.reconnectDelay = reconnectDelay
        self.onEvent = onEvent
        let thread = Thread { [self] in
            diffstream_name_this_thread(name)
            loop()
        }
        thread.start()
    }

    /// Follows a channel (from any thread).
    public func subscribe(_ channel: String) {
        shared.withLock { _ = $0.wanted.insert(channel) }
        wake()
    }

    /// Stops following a channel (from any thread).
    public func unsubscribe(_ channel: String) {
        shared.withLock { _ = $0.wanted.remove(channel) }
        wake()
    }

    /// Closes the connection and ends the thread; no event follows. Idempotent.
    public func stop() {
        let first = shared.withLock { shared -> Bool in
            defer { shared.stopping = true }
            return !shared.stopping
        }
        guard first else { return }
        wake()
        stopped.wait()
        wakePipe.close()
    }

    private func wake() { wakePipe.wake() }

    private var isStopping: Bool { shared.withLock { $0.stopping } }

    private func loop() {
        RedisConnection.blockSIGPIPEOnThisThread()
        var lastError: RedisError?
        while !isStopping {
            var served = false
            do throws(RedisError) {
                let connection = try RedisConnection(url: url, timeout: timeout)
                defer { connection.close() }
                try serve(connection, lastError: &lastError, served: &served)
            } catch {
                // A connection that served and then broke (`CLIENT KILL TYPE pubsub`, a proxy's restart)
                // is made again at once, and only an attempt that fails is an outage: its `confirmed`
                // channels get their positions checked, which fills what was missed. No busy loop: an
                // attempt at once follows only a connection that subscribed and had its PING answered,
                // and one that fails before that waits the reconnect delay.
                if served, !isStopping { continue }
                if error != lastError { onEvent(.disconnected(error)) }  // once per outage, not once per attempt
                lastError = error
                if isStopping { break }
                _ = wakePipe.poll(-1, seconds: reconnectDelay)
            }
        }
        stopped.signal()
    }

    /// Subscribes, then relays until the connection fails (throws) or the subscriber stops (returns);
    /// when to ping and when to give up is ``PubSubLiveness``'s to say. `subscribed` is announced when
    /// the `PING` sent after the first `SUBSCRIBE` is answered: Redis answers in order, so every channel
    /// is subscribed by then, and the server is known to be awake.
    /// `lastError` is cleared once subscribed: a connection that fails again the same way before that
    /// (a SUBSCRIBE refused each time) is the same outage, announced once. `served` says it got that far.
    private func serve(_ connection: RedisConnection, lastError: inout RedisError?, served: inout Bool) throws(RedisError) {
        subscribed = []
        try sync(connection)
        try ping(connection)
        var announced = false
        var liveness = PubSubLiveness(now: now(), pingInterval: pingInterval, timeout: timeout)
        while true {
            let wait: Double
            switch liveness.step(at: now()) {
            case .dead:
                // Dead only if nothing is waiting to be read: after a stall of this process (a paused
                // VM, a loaded machine) the answer may be in the socket's buffer already.
                let ready = wakePipe.poll(connection.fileDescriptor, seconds: 0)
                guard ready.socket else { throw .timedOut(call: "PING (pub/sub)", seconds: timeout) }
                if ready.wake || !wakePipe.isOpen { try sync(connection) }
                wait = 0
            case .ping: try ping(connection); continue
            case .wait(let seconds): wait = seconds
            }
            let ready = wakePipe.poll(connection.fileDescriptor, seconds: wait)
            if isStopping { return }
            if ready.wake || !wakePipe.isOpen { try sync(connection) }  // without the pipe, changes are looked for at every poll
            guard ready.socket else { continue }
            try connection.readAvailable()
            liveness.heard(at: now())
            while let reply = try connection.bufferedReply() {
                if reply == .status("PONG") || reply.array?.first?.string == "pong" {
                    if !announced { onEvent(.subscribed) }
                    announced = true
                    served = true
                    lastError = nil
                } else if let parts = reply.array, parts.count == 3, parts[0].string == "message" {
                    onEvent(.message(channel: parts[1].string ?? "", payload: parts[2].bytes ?? []))
                } else if let parts = reply.array, parts.count == 3, parts[0].string == "subscribe", let channel = parts[1].string {
                    onEvent(.confirmed(channel: channel))
                } else if case .error(let message) = reply {
                    // A refused SUBSCRIBE (an ACL without the channels): its channels are not followed, so
                    // start again on a new connection after the reconnect delay rather than wait for nothing.
                    throw .server(command: "SUBSCRIBE", message: message)
                }  // else an unsubscribe confirmation
            }
        }
    }

    /// Seconds since the subscriber was made, on the monotonic clock (for ``PubSubLiveness``).
    private func now() -> Double {
        MonotonicClock.now() - origin
    }

    private func ping(_ connection: RedisConnection) throws(RedisError) {
        try connection.append([Array("PING".utf8)])
        try connection.flush()
    }

    /// Sends what changed in the wanted channels (not waiting for the confirmations).
    private func sync(_ connection: RedisConnection) throws(RedisError) {
        let target = shared.withLock { $0.wanted }
        let adding = target.subtracting(subscribed).sorted(), removing = subscribed.subtracting(target).sorted()
        if !adding.isEmpty { try connection.append([Array("SUBSCRIBE".utf8)] + adding.map { Array($0.utf8) }) }
        if !removing.isEmpty { try connection.append([Array("UNSUBSCRIBE".utf8)] + removing.map { Array($0.utf8) }) }
        if !adding.isEmpty || !removing.isEmpty { try connection.flush() }
        subscribed = target
    }
}
