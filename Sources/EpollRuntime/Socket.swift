#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the socket calls the server uses; errors keep the call's name and errno.
enum Socket {
    /// Creates a non-blocking listening TCP socket bound to `host:port` (IPv4 or IPv6 literal, or
    /// `localhost`). Port 0 picks a free port; ``localPort(_:)`` tells which.
    static func listen(host: String, port: UInt16, backlog: Int32 = 4096) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw SystemError("getaddrinfo(\(host))", errno: status == EAI_SYSTEM ? errno : EINVAL)
        }
        defer { freeaddrinfo(result) }
        let fd = try systemCall("socket") {
            socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var on: Int32 = 1
            _ = try systemCall("setsockopt(SO_REUSEADDR)") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            }
            if info.pointee.ai_family == AF_INET6 {
                var off: Int32 = 0  // accept IPv4-mapped addresses too when bound to ::
                _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
            }
            _ = try systemCall("bind(\(host):\(port))") { bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
            _ = try systemCall("listen") { Glibc.listen(fd, backlog) }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// The port a socket is bound to.
    static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return 0 }
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
    }

    /// The peer's numeric host and port, or "?" for what cannot be read (`getpeername`, `getnameinfo`).
    static func peerAddress(_ fd: Int32) -> (host: String, port: String) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        guard ok == 0 else { return ("?", "?") }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard status == 0 else { return ("?", "?") }
        return (String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Accepts one connection, non-blocking. `nil` when none is waiting.
    static func accept(_ listener: Int32) throws(SystemError) -> Int32? {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                var on: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw SystemError("accept", errno: errno)
            }
        }
    }

    /// The outcome of a non-blocking read or write.
    enum IOResult: Equatable {
        case bytes(Int)
        case wouldBlock
        case closed
    }

    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET, EPIPE, ETIMEDOUT: return .closed
            default: throw SystemError("read", errno: errno)
            }
        }
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult {
        while true {
            let count = send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .bytes(count) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case ECONNRESET, EPIPE, ETIMEDOUT: return .closed
            default: throw SystemError("send", errno: errno)
            }
        }
    }
}
