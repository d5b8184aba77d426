import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a connection reports, in order: one `response`, any number of `bytes`, one `finished`.
public enum TransportEvent: Sendable {
    /// The response's status (after any interim `1xx`).
    case response(status: Int)
    /// Body bytes as they arrive (decoded from any transfer coding).
    case bytes([UInt8])
    /// The connection ended: `nil` when the server ended the body, otherwise why (a sentence naming the failing call).
    case finished(error: String?)
}

/// A started streaming request.
public protocol FeedStreamConnection: Sendable {
    /// Ends the connection; no `finished` is guaranteed after a cancel.
    func cancel()
}

/// How ``FeedClient`` makes its streaming `GET` requests (`text/event-stream`). `URLSession` is the
/// default; the `TLSStreamClient` module offers one with a CA file and `--insecure` on Linux.
public protocol FeedStreamTransport: Sendable {
    /// Opens `request` (a `GET` with its headers), reporting on `report` in order, from one thread at a time.
    func open(_ request: URLRequest, report: @escaping @Sendable (TransportEvent) -> Void) -> any FeedStreamConnection
}

/// The default transport: ``StreamTransport`` with the client's session configuration.
struct URLSessionStreamTransport: FeedStreamTransport {
    let configuration: URLSessionConfiguration
    let insecure: Bool

    func open(_ request: URLRequest, report: @escaping @Sendable (TransportEvent) -> Void) -> any FeedStreamConnection {
        StreamTransport.open(request, configuration: configuration, insecure: insecure, report: report)
    }
}

/// One streaming HTTP request over `URLSession` with a data delegate: bytes are handed on as they arrive
/// (FoundationNetworking on Linux has no `bytes(for:)`; the delegate works on Linux and Apple platforms).
/// The session is this connection's own and is invalidated when it ends.
final class StreamTransport: NSObject, URLSessionDataDelegate, Sendable {
    private let report: @Sendable (TransportEvent) -> Void
    private let insecure: Bool

    private init(report: @escaping @Sendable (TransportEvent) -> Void, insecure: Bool) {
        self.report = report
        self.insecure = insecure
    }

    /// A started connection; `cancel` ends it (no `finished` is guaranteed after a cancel).
    struct Connection: FeedStreamConnection {
        let session: URLSession
        let task: URLSessionDataTask

        func cancel() {
            task.cancel()
            session.invalidateAndCancel()
        }
    }

    /// Opens `request`, reporting on `report` (called on the session's delegate queue, in order).
    static func open(_ request: URLRequest, configuration: URLSessionConfiguration, insecure: Bool,
                     report: @escaping @Sendable (TransportEvent) -> Void) -> Connection {
        let delegate = StreamTransport(report: report, insecure: insecure)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
        let task = session.dataTask(with: request)
        task.resume()
        return Connection(session: session, task: task)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        report(.response(status: (response as? HTTPURLResponse)?.statusCode ?? 0))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        report(.bytes([UInt8](data)))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        report(.finished(error: error.map { ($0 as NSError).localizedDescription }))
        session.finishTasksAndInvalidate()
    }

    #if !canImport(FoundationNetworking)
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        if insecure, challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust, let trust = challenge.protectionSpace.serverTrust {
            completionHandler(.useCredential, URLCredential(trust: trust))
        } else {
            completionHandler(.performDefaultHandling, nil)
        }
    }
    #endif
}
