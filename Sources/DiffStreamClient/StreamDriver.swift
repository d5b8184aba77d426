import DiffStream
import DiffStreamJSON
import Foundation
import Timekeeping
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns the machine's untyped events into a sequence's elements (a typed decoder per feed, or nothing).
protocol EventTransform: Sendable {
    associatedtype Element: Sendable
    mutating func transform(_ event: WireFeedEvent) -> Element
}

/// The untyped form: events as they are.
struct WireTransform: EventTransform {
    func transform(_ event: WireFeedEvent) -> WireFeedEvent { event }
}

/// The typed form: one decoder per feed.
struct TypedTransform<Section: Identifiable & Hashable & Decodable & Sendable, Item: Identifiable & Hashable & Decodable & Sendable>: EventTransform
where Section.ID: Sendable, Item.ID: Sendable {
    private var decoders: [String: TypedFeedDecoder<Section, Item>] = [:]

    mutating func transform(_ event: WireFeedEvent) -> FeedEvent<Section, Item> {
        switch event {
        case .update(let update):
            var decoder = decoders[update.feed] ?? TypedFeedDecoder()
            let typed = decoder.decode(update)
            decoders[update.feed] = decoder
            return .update(typed)
        case .deleted(let feed):
            decoders[feed] = nil
            return .deleted(feed: feed)
        case .unauthorized(let problem): return .unauthorized(problem)
        case .forbidden(let problem): return .forbidden(problem)
        case .notFound(let problem): return .notFound(problem)
        case .serverError(let problem): return .serverError(problem)
        case .resyncing(let feed, let reason): return .resyncing(feed: feed, reason: reason)
        case .unavailable(let feed, let detail): return .unavailable(feed: feed, detail: detail)
        case .available(let feed): return .available(feed: feed)
        case .connection(let state): return .connection(state)
        }
    }
}

/// Runs a ``StreamMachine`` (or a ``PollMachine``) against the network: performs its actions with the client's ``FeedStreamTransport``, feeds
/// it transport events and timer ticks, and yields its events. The clock is the process's monotonic
/// uptime. Ends when the machine finishes or the consumer stops iterating.
enum StreamDriver {
    static func run<Machine: FollowingMachine, Transform: EventTransform>(
        machine initial: Machine, client: FeedClient, transform initialTransform: Transform,
        continuation: AsyncThrowingStream<Transform.Element, any Error>.Continuation
    ) async {
        var machine = initial
        var transform = initialTransform
        let (inputs, feed) = makeInputStream()
        var connections: [Int: any FeedStreamConnection] = [:]
        let transport = client.resolvedStreamTransport
        // The cache is keyed by the subject of the token in use: re-keyed when the token hook changes it.
        var cache = client.cache
        var cacheToken = machine.token
        var bodies: [Int: (status: Int, body: [UInt8])] = [:]
        var timer: Task<Void, Never>?
        let start = MonotonicClock.now()
        func now() -> Double { MonotonicClock.now() - start }
        defer {
            timer?.cancel()
            for connection in connections.values { connection.cancel() }
            continuation.finish()
        }
        var pending: [StreamMachine.Input] = [.start]
        var iterator = inputs.makeAsyncIterator()
        while !Task.isCancelled {
            if pending.isEmpty {
                guard let next = await iterator.next() else { return }
                pending.append(next)
            }
            let input = pending.removeFirst()
            // Transport events become the machine's inputs; a refused connection's body is gathered first.
            let machineInput: StreamMachine.Input?
            switch input {
            case .bytes(let id, let bytes) where bodies[id] != nil:
                let room = 65_536 - (bodies[id]?.body.count ?? 0)
                bodies[id]?.body.append(contentsOf: bytes.prefix(max(0, room)))
                machineInput = nil
            case .closed(let id, let error) where bodies[id] != nil:
                let refused = bodies.removeValue(forKey: id)!
                connections.removeValue(forKey: id)
                machineInput = refused.status == 0 ? .closed(connection: id, error: error) : .refusedConnection(connection: id, status: refused.status, body: refused.body)
            case .refusedConnection(let id, let status, _):
                bodies[id] = (status, [])  // marker from the transport: wait for the body
                machineInput = nil
            case .closed(let id, _):
                connections.removeValue(forKey: id)
                machineInput = input
            default:
                machineInput = input
            }
            guard let machineInput else { continue }
            for action in machine.handle(machineInput, now: now()) {
                switch action {
                case .connect(let id, let request):
                    if request.token != cacheToken {  // a stream for another user: its data goes under that user's key
                        cacheToken = request.token
                        cache = cache?.keyed(for: cacheToken)
                    }
                    guard let urlRequest = client.urlRequest(for: request) else {
                        continuation.finish(throwing: FeedClientError.invalidURL(client.baseURL.absoluteString + request.path))
                        return
                    }
                    connections[id] = transport.open(urlRequest) { event in
                        switch event {
                        case .response(let status) where status == 200: feed.yield(.opened(connection: id))
                        case .response(let status): feed.yield(.refusedConnection(connection: id, status: status, body: []))
                        case .bytes(let bytes): feed.yield(.bytes(connection: id, bytes))
                        case .finished(let error): feed.yield(.closed(connection: id, error: error))
                        }
                    }
                case .cancel(let id):
                    connections.removeValue(forKey: id)?.cancel()
                    bodies[id] = nil
                case .emit(let event):
                    if case .terminated = continuation.yield(transform.transform(event)) { return }
                case .askForToken(let problem):
                    if let hook = client.tokenHook {
                        Task {
                            let fresh = await hook(problem)
                            feed.yield(.token(fresh))
                        }
                    } else {
                        pending.append(.token(nil))
                    }
                case .store(let feedName, let cursor):
                    // Keyed by the token of the stream that delivered it (``connect``), never a token
                    // the hook gave since: until a stream opens with that one, data is the old user's.
                    cache?.save(feed: feedName, cursor: cursor)
                case .finish:
                    return
                }
            }
            // Re-arm the timer for the machine's next deadline.
            timer?.cancel()
            timer = nil
            if let deadline = machine.nextDeadline {
                let delay = max(0, deadline - now())
                timer = Task {
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000) + 1_000_000)
                    if !Task.isCancelled { feed.yield(.timer) }
                }
            }
        }
    }

    private static func makeInputStream() -> (AsyncStream<StreamMachine.Input>, AsyncStream<StreamMachine.Input>.Continuation) {
        var captured: AsyncStream<StreamMachine.Input>.Continuation?
        let stream = AsyncStream<StreamMachine.Input> { captured = $0 }
        return (stream, captured!)
    }
}
