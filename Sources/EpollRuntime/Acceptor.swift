#if canImport(Glibc)
import Glibc
#endif
import Logging

/// The first loop's listening sockets: accepts connections, applies the caps (global and per
/// address) and hands each socket to a loop.
///
/// Not pure: it owns descriptors and calls `accept(2)`. What it decides is the pure parts': the caps'
/// verdict (``ConnectionQuota``, shared by every loop), the loop that takes a connection
/// (``LoopHandoff``), the pause after running out of descriptors (``AcceptPause``) and the 503 of a
/// refused one (``ConnectionQuota/Verdict/refusal(perAddressCap:)``).
///
/// Not `Sendable`: created by, and used on, the first loop's thread only (reached from elsewhere
/// through that loop's `execute`).
final class Acceptor {
    /// How many connections one readiness of a listener accepts before the loop serves its other work.
    static let acceptsPerWakeup = 256

    unowned let loop: LoopCore
    private var listeners: [ListenerHandler] = []
    private var pause = AcceptPause()
    private var handoff: LoopHandoff

    init(loop: LoopCore, loops: Int) {
        self.loop = loop
        self.handoff = LoopHandoff(loops: loops, acceptor: loop.index)
    }

    /// Watches the listening socket `fd` (this loop's thread).
    func listen(on fd: Int32) throws(SystemError) {
        let listener = ListenerHandler(fd: fd, acceptor: self)
        try loop.loop.register(fd, events: Epoll.`in`, handler: listener)
        listeners.append(listener)
    }

    /// Stops watching and closes every listening socket: nothing new is accepted after this.
    func closeListeners() {
        for listener in listeners {
            loop.loop.deregister(listener.fd)
            close(listener.fd)
        }
        listeners.removeAll()
    }

    /// The loop's tick: watches the listeners again once an accept pause has ended.
    func tick(now: Double) {
        guard pause.resume(now: now) else { return }
        for listener in listeners { loop.loop.modify(listener.fd, events: Epoll.`in`) }
    }

    /// Accepts what is waiting on `listener` (up to ``acceptsPerWakeup``) and hands each socket out.
    func acceptConnections(from listener: Int32) {
        guard pause.allowsAccepting(now: EventLoop.now()) else { return }
        let server = loop.server
        for _ in 0..<Self.acceptsPerWakeup {
            let fd: Int32
            do {
                guard let accepted = try Socket.accept(listener) else { return }
                fd = accepted
            } catch {
                if AcceptPause.pauses(errno: error.errno) {
                    // Out of descriptors: stop accepting for a moment instead of spinning or dying.
                    server.logger.warning("\(error): pausing accept for 100 ms", source: HTTPServer.logSource)
                    pause.pause(now: EventLoop.now())
                    loop.loop.modify(listener, events: 0)
                } else {
                    server.logger.error("\(error)", source: HTTPServer.logSource)
                }
                return
            }
            if loop.isShuttingDown {
                close(fd)
                continue
            }
            let peer = Socket.peerAddress(fd)
            let verdict = server.quota.admit(address: peer.host)
            switch handoff.destination(for: verdict) {
            case .close:
                close(fd)  // far over a cap: not even a 503
                server.metrics.connectionsRefused.add(1, ordering: .relaxed)
            case .loop(let index):
                let target = server.loops[index]
                if target === loop {
                    loop.adopt(fd: fd, peer: peer, verdict: verdict)
                } else {
                    target.loop.execute { [target] in target.adopt(fd: fd, peer: peer, verdict: verdict) }
                }
            }
        }
    }
}

/// Accepts connections when its listening socket is readable.
///
/// Not `Sendable`: created and used on the first loop's thread only.
final class ListenerHandler: EventHandler {
    let fd: Int32
    unowned let acceptor: Acceptor

    init(fd: Int32, acceptor: Acceptor) {
        self.fd = fd
        self.acceptor = acceptor
    }

    func handle(events: UInt32) { acceptor.acceptConnections(from: fd) }
}

extension ConnectionQuota.Verdict {
    /// The answer to a connection the caps refused (nil: it is not refused with an answer), written
    /// like any response and followed by a lingering close, so the client reads the 503 instead of a
    /// reset. `perAddressCap` is the per-address cap the message names.
    func refusal(perAddressCap: Int) -> HTTPResponse? {
        switch self {
        case .admit, .drop:
            nil
        case .refuseServerFull:
            .error(.serviceUnavailable, "service unavailable", detail: "the server is at its connection limit; retry later",
                   headers: ["Connection": "close", "Retry-After": "1"])
        case .refuseAddressFull:
            .error(.serviceUnavailable, "service unavailable",
                   detail: "too many connections from your address (at most \(perAddressCap)); close some and retry",
                   headers: ["Connection": "close", "Retry-After": "1"])
        }
    }
}
