import DiffStreamJSON
import HTTPCore
import Synchronization

/// The transport seam in memory: a subscriber's stream is a list of events a test awaits one by one.
/// No sockets: the feed layer and hosted view models are tested through this (`FeedStreamTests`).
public final class MemorySink: EventSink {
    /// One event as a client reads it (WHATWG HTML §9.2.6): its type, id and data; a `retry:` field
    /// before it is kept apart.
    public struct Event: Sendable, Equatable {
        public var type: String
        public var id: String?
        public var data: String
        public var json: JSONValue? { try? JSONParser.parse(Array(data.utf8)) }
    }

    private struct State {
        var events: [Event] = []
        /// Every byte queued, as the client would read it (comments and `retry:` included).
        var raw: [UInt8] = []
        var delivered = 0
        var waiter: CheckedContinuation<Event?, Never>?
        var closed = false
        var fallenBehind = false
        /// Calls of `send` so far, and the first one dropped since the client fell behind (reported
        /// to the overflow handler when it drains, as the server's loop reports it before then).
        var sends = 0
        var firstDropped: Int?
        var onTermination: [@Sendable () -> Void] = []
        var onResync: (@Sendable (any EventSink) -> Void)?
        var onOverflow: (@Sendable (Int) -> Void)?
    }

    public let id: Int
    private let state = Mutex(State())
    private static let ids = Atomic<Int>(1)

    public init() { id = Self.ids.add(1, ordering: .relaxed).newValue }

    public func send(_ payload: EventPayload) {
        deliver(payload, resuming: false)
    }

    public func resume(with payload: EventPayload) {
        deliver(payload, resuming: true)
    }

    private func deliver(_ payload: EventPayload, resuming: Bool) {
        let parsed = Self.parse(payload.bytes)
        let waiter = state.withLock { state -> (CheckedContinuation<Event?, Never>, Event)? in
            guard !state.closed else { return nil }
            if !resuming { state.sends += 1 }
            if resuming {
                state.fallenBehind = false
            } else if state.fallenBehind {  // dropped, as a full queue drops
                if state.firstDropped == nil { state.firstDropped = state.sends }
                return nil
            }
            state.events += parsed
            state.raw += payload.bytes
            guard let waiter = state.waiter, state.delivered < state.events.count else { return nil }
            state.waiter = nil
            state.delivered += 1
            return (waiter, state.events[state.delivered - 1])
        }
        if let (waiter, event) = waiter { waiter.resume(returning: event) }
    }

    public func close() {
        let (actions, waiter) = state.withLock { state -> ([@Sendable () -> Void], CheckedContinuation<Event?, Never>?) in
            guard !state.closed else { return ([], nil) }
            state.closed = true
            defer { state.onTermination = []; state.waiter = nil }
            return (state.onTermination, state.delivered == state.events.count ? state.waiter : nil)
        }
        waiter?.resume(returning: nil)
        for action in actions { action() }
    }

    public func onTermination(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.closed { return true }
            state.onTermination.append(action)
            return false
        }
        if now { action() }
    }

    public func onResync(_ action: @escaping @Sendable (any EventSink) -> Void) {
        state.withLock { $0.onResync = action }
    }

    public func onOverflow(_ action: @escaping @Sendable (Int) -> Void) {
        state.withLock { $0.onOverflow = action }
    }

    /// As the server's stream: the overflow (if any) is reported first, then `final` is queued even
    /// when the client fell behind, and the stream ends.
    public func end(with final: EventPayload) {
        end(withLast: { final })
    }

    public func end(withLast last: @escaping @Sendable () -> EventPayload?) {
        let overflow = state.withLock { state in
            defer { state.firstDropped = nil }
            return state.firstDropped.flatMap { number in state.onOverflow.map { ($0, number) } }
        }
        if let (action, number) = overflow { action(number) }
        if let payload = last() { deliver(payload, resuming: true) }
        close()
    }

    // MARK: What a test does

    /// The next event, waiting for it; nil once the stream has ended and every event was read.
    public func next() async -> Event? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Event?? in
                if state.delivered < state.events.count {
                    state.delivered += 1
                    return .some(state.events[state.delivered - 1])
                }
                if state.closed { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Every byte queued so far, as text (comments and `retry:` fields included).
    public var text: String { state.withLock { String(decoding: $0.raw, as: UTF8.self) } }

    /// The client stops reading: events are dropped from now on, as a queue over its budget drops them.
    public func fallBehind() {
        state.withLock { $0.fallenBehind = true }
    }

    /// The client has read what was queued: the feed is asked for a fresh state.
    public func drain() {
        let (overflow, resync) = state.withLock { state in
            defer { state.firstDropped = nil }
            return (state.firstDropped.flatMap { number in state.onOverflow.map { ($0, number) } }, state.onResync)
        }
        if let (action, number) = overflow { action(number) }
        resync?(self)
    }

    /// The client disconnects.
    public func disconnect() { close() }

    /// Events as a client reads them: fields per line, an empty line ends an event; comments and
    /// `retry:` lines are not events.
    public static func parse(_ bytes: [UInt8]) -> [Event] {
        var events: [Event] = []
        var type = "message", id: String?, data: [String] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty {
                if !data.isEmpty { events.append(Event(type: type, id: id, data: data.joined(separator: "\n"))) }
                type = "message"; id = nil; data = []
            } else if line.hasPrefix("event: ") {
                type = String(line.dropFirst(7))
            } else if line.hasPrefix("id: ") {
                id = String(line.dropFirst(4))
            } else if line.hasPrefix("data: ") {
                data.append(String(line.dropFirst(6)))
            }
        }
        return events
    }
}

/// Hands each event to each sink: the simplest broadcaster the seam allows.
public struct MemoryBroadcaster: EventBroadcaster {
    public init() {}
    public func broadcast(_ payload: EventPayload, to sinks: [any EventSink], written: (@Sendable () -> Void)?) {
        for sink in sinks { sink.send(payload) }
        written?()
    }
}
