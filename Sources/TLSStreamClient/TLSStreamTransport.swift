import COpenSSL
import OpenSSLSupport
import DiffStreamClient
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``FeedStreamTransport`` of its own: HTTP/1.1 `GET` over a blocking socket on a thread per connection,
/// plain or TLS through OpenSSL, with the CA file and the `--insecure` that FoundationNetworking on Linux
/// cannot offer.
///
/// ```swift
/// var client = FeedClient(baseURL: url)
/// client.streamTransport = try TLSStreamTransport(caFile: "ca.pem")
/// ```
///
/// TLS verifies the chain against `caFile` (or OpenSSL's default paths) and the URL's host name or IP
/// address against the certificate, and sends the name as SNI; `insecure` verifies nothing. No
/// `Accept-Encoding` is sent; a chunked body is decoded (RFC 9112 §7.1).
public struct TLSStreamTransport: FeedStreamTransport {
    private let tls: TLSClientContext
    /// Seconds to wait for a connection (and for each write).
    public let connectTimeout: Double
    /// Seconds of silence after which a read fails (the client's heartbeat check usually acts sooner).
    public let readTimeout: Double

    /// - Parameters:
    ///   - caFile: a PEM file of the certificate authorities to trust; `nil` for OpenSSL's default paths.
    ///   - insecure: accept any server certificate.
    /// - Throws: ``TLSStreamError`` when the CA file cannot be read.
    public init(caFile: String? = nil, insecure: Bool = false, connectTimeout: Double = 10, readTimeout: Double = 120) throws(TLSStreamError) {
        tls = try TLSClientContext(caFile: caFile, insecure: insecure)
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
    }

    public func open(_ request: URLRequest, report: @escaping @Sendable (TransportEvent) -> Void) -> any FeedStreamConnection {
        let connection = SocketConnection(report: report)
        let tls = tls
        let connectTimeout = connectTimeout
        let readTimeout = readTimeout
        let target = StreamTarget(request)
        Thread.detachNewThread {
            connection.run(target: target, tls: tls, connectTimeout: connectTimeout, readTimeout: readTimeout)
        }
        return connection
    }
}

/// What the connection thread needs of a `URLRequest`.
struct StreamTarget: Sendable {
    var scheme: String?
    var host: String?
    var port: Int?
    var pathAndQuery: String
    var headers: [(String, String)]

    init(_ request: URLRequest) {
        let url = request.url
        let components = url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false) }
        scheme = components?.scheme?.lowercased()
        // An IPv6 literal without its brackets (Foundation on Linux keeps them), for getaddrinfo and verification.
        host = components?.host.map { $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0 }
        port = components?.port
        let path = components?.percentEncodedPath ?? ""
        pathAndQuery = (path.isEmpty ? "/" : path) + (components?.percentEncodedQuery.map { "?" + $0 } ?? "")
        headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The request head: `GET`, `Host`, the request's fields, `Connection: close`; no `Accept-Encoding`.
    func head(host: String, port: Int, defaultPort: Int) -> [UInt8] {
        let hostField = (host.contains(":") ? "[\(host)]" : host) + (port == defaultPort ? "" : ":\(port)")
        var text = "GET \(pathAndQuery) HTTP/1.1\r\nHost: \(hostField)\r\n"
        for (name, value) in headers where !["host", "connection", "accept-encoding"].contains(name.lowercased()) {
            text += "\(name): \(value)\r\n"
        }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }
}

/// One streaming request on its own thread. `cancel` shuts the socket down (waking a blocked read);
/// the thread closes it. Nothing is reported after a cancel.
final class SocketConnection: FeedStreamConnection {
    private struct State {
        var fd: Int32 = -1
        var cancelled = false
    }

    /// Shared by `cancel` (any thread) and the connection's own thread.
    private let state = Mutex(State())
    private let report: @Sendable (TransportEvent) -> Void

    init(report: @escaping @Sendable (TransportEvent) -> Void) { self.report = report }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if state.fd >= 0 { _ = shutdown(state.fd, Int32(SHUT_RDWR)) }
        }
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    private func send(_ event: TransportEvent) {
        if !isCancelled { report(event) }
    }

    func run(target: StreamTarget, tls: TLSClientContext, connectTimeout: Double, readTimeout: Double) {
        // OpenSSL writes with write(2), which raises SIGPIPE on a socket shut down by `cancel` or the peer.
        // Blocked on this thread (ours alone), the signal stays pending and dies with the thread; the write
        // fails with EPIPE instead of ending the process.
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, nil)
        var fd: Int32 = -1
        var ssl: OpaquePointer?
        defer {
            if let ssl { SSL_free(ssl) }
            state.withLock { $0.fd = -1 }
            if fd >= 0 { close(fd) }
        }
        do throws(TLSStreamError) {
            guard let scheme = target.scheme, scheme == "http" || scheme == "https", let host = target.host, !host.isEmpty else {
                throw TLSStreamError(call: "open", message: "not an http(s) URL")
            }
            let defaultPort = scheme == "https" ? 443 : 80
            let port = target.port ?? defaultPort
            fd = try Self.openSocket(host: host, port: port, timeout: connectTimeout)
            let registered = state.withLock { state in
                guard !state.cancelled else { return false }
                state.fd = fd
                return true
            }
            guard registered else { return }
            try Self.setTimeout(fd, SO_RCVTIMEO, readTimeout, call: "setsockopt(SO_RCVTIMEO)")
            if scheme == "https" {
                ssl = try Self.handshake(fd: fd, host: host, tls: tls)
            }
            let channel = Channel(fd: fd, ssl: ssl, readTimeout: readTimeout)
            try channel.write(target.head(host: host, port: port, defaultPort: defaultPort))
            var parser = HTTPResponseParser()
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = try channel.read(into: &buffer)
                let outputs: [HTTPResponseParser.Output]
                do {
                    outputs = count == 0 ? try parser.finish() : try parser.consume(buffer[..<count])
                } catch {
                    throw TLSStreamError(call: "read", message: count == 0 ? error.reason : "malformed HTTP response: \(error.reason)")
                }
                for output in outputs {
                    switch output {
                    case .head(let status): send(.response(status: status))
                    case .body(let bytes): if !bytes.isEmpty { send(.bytes(bytes)) }
                    case .end:
                        send(.finished(error: nil))
                        return
                    }
                }
                if isCancelled { return }
            }
        } catch {
            send(.finished(error: error.description))
        }
    }

    // MARK: System calls

    private static func errnoText(_ code: Int32) -> String { "\(String(cString: strerror(code))) (errno \(code))" }

    private static func setTimeout(_ fd: Int32, _ option: Int32, _ seconds: Double, call: String) throws(TLSStreamError) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: .init(Int((seconds - seconds.rounded(.down)) * 1_000_000)))
        guard setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw TLSStreamError(call: call, message: errnoText(errno))
        }
    }

    /// Resolves `host` and connects to the first address that answers (`SO_SNDTIMEO` bounds `connect`).
    private static func openSocket(host: String, port: Int, timeout: Double) throws(TLSStreamError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw TLSStreamError(call: "getaddrinfo", message: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = TLSStreamError(call: "connect", message: "no address for \(host)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = TLSStreamError(call: "socket", message: errnoText(errno))
                continue
            }
            do {
                try setTimeout(fd, SO_SNDTIMEO, timeout, call: "setsockopt(SO_SNDTIMEO)")
            } catch {
                close(fd)
                throw error
            }
            if connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return fd }
            let code = errno
            close(fd)
            lastError = TLSStreamError(call: "connect", message: "cannot connect to \(host) port \(port): " + (code == EINPROGRESS || code == EAGAIN ? "timed out after \(timeout) s" : errnoText(code)))
        }
        throw lastError
    }

    /// The TLS handshake on a connected socket, with the host name (or IP address) verified and sent as SNI.
    private static func handshake(fd: Int32, host: String, tls: TLSClientContext) throws(TLSStreamError) -> OpaquePointer {
        guard let ssl = SSL_new(tls.context) else { throw TLSStreamError(call: "SSL_new", message: OpenSSLContext.lastError()) }
        SSL_set_fd(ssl, fd)
        if !tls.insecure {
            var probe = in6_addr()
            let isAddress = inet_pton(AF_INET, host, &probe) == 1 || inet_pton(AF_INET6, host, &probe) == 1
            let ok = isAddress ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) : SSL_set1_host(ssl, host)
            guard ok == 1 else {
                SSL_free(ssl)
                throw TLSStreamError(call: isAddress ? "X509_VERIFY_PARAM_set1_ip_asc" : "SSL_set1_host", message: OpenSSLContext.lastError())
            }
        }
        // RFC 6066 §3: SNI carries a DNS name, never an address literal.
        var probe = in6_addr()
        if inet_pton(AF_INET, host, &probe) != 1, inet_pton(AF_INET6, host, &probe) != 1 {
            _ = diffstream_SSL_set_tlsext_host_name(ssl, host)
        }
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            let verification = SSL_get_verify_result(ssl)
            let detail = OpenSSLContext.lastError()
            SSL_free(ssl)
            if verification != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verification))
                throw TLSStreamError(call: "SSL_connect", message: "the server's certificate was not accepted: \(reason)")
            }
            throw TLSStreamError(call: "SSL_connect", message: "TLS handshake failed: \(detail)")
        }
        return ssl
    }
}

/// Reads and writes on a connected socket, through TLS when `ssl` is set.
struct Channel {
    #if canImport(Glibc)
    static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    static let sendFlags: Int32 = 0
    #endif
    let fd: Int32
    let ssl: OpaquePointer?
    let readTimeout: Double

    func write(_ bytes: [UInt8]) throws(TLSStreamError) {
        var offset = 0
        while offset < bytes.count {
            let count: Int = bytes.withUnsafeBytes { raw in
                let pointer = raw.baseAddress! + offset
                if let ssl { return Int(SSL_write(ssl, pointer, Int32(bytes.count - offset))) }
                return send(fd, pointer, bytes.count - offset, Self.sendFlags)
            }
            guard count > 0 else {
                if let ssl { throw TLSStreamError(call: "SSL_write", message: OpenSSLContext.lastError() + " (SSL_get_error \(SSL_get_error(ssl, Int32(count))))") }
                throw TLSStreamError(call: "send", message: String(cString: strerror(errno)) + " (errno \(errno))")
            }
            offset += count
        }
    }

    /// Reads what is there (blocking), returning the count; `0` at the end of the stream.
    func read(into buffer: inout [UInt8]) throws(TLSStreamError) -> Int {
        let capacity = buffer.count
        let (count, code): (Int, Int32) = buffer.withUnsafeMutableBytes { raw in
            if let ssl {
                let result = SSL_read(ssl, raw.baseAddress, Int32(capacity))
                return (Int(result), result > 0 ? 0 : SSL_get_error(ssl, result))
            }
            let result = recv(fd, raw.baseAddress, capacity, 0)
            return (result, result >= 0 ? 0 : errno)
        }
        if count > 0 { return count }
        if ssl != nil {
            switch code {
            case SSL_ERROR_ZERO_RETURN: return 0
            case SSL_ERROR_SYSCALL where errno == EAGAIN || errno == EWOULDBLOCK:
                throw TLSStreamError(call: "SSL_read", message: "no data for \(readTimeout) s")
            case SSL_ERROR_SYSCALL where errno == 0:
                return 0
            default:
                throw TLSStreamError(call: "SSL_read", message: OpenSSLContext.lastError() + " (SSL_get_error \(code))")
            }
        }
        if count == 0 { return 0 }
        if code == EAGAIN || code == EWOULDBLOCK { throw TLSStreamError(call: "recv", message: "no data for \(readTimeout) s") }
        throw TLSStreamError(call: "recv", message: String(cString: strerror(code)) + " (errno \(code))")
    }
}
