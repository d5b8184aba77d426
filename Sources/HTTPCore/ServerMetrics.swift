import Synchronization

/// Counters the server keeps for `/metrics`: plain atomics, cheap on the loops' hot paths. Updated from
/// the loop thread, read from anywhere (and published to swift-metrics when `/metrics` is rendered).
public final class ServerMetrics: Sendable {
    package let connectionsOpen = Atomic<Int>(0)
    package let connectionsAccepted = Atomic<Int>(0)
    package let connectionsRefused = Atomic<Int>(0)
    package let connectionsRefusedPerAddress = Atomic<Int>(0)
    package let requests = Atomic<Int>(0)
    package let streamsOpen = Atomic<Int>(0)
    package let streamOverflows = Atomic<Int>(0)
    package let timeouts = Atomic<Int>(0)
    package let badRequests = Atomic<Int>(0)
    /// Counters each event loop keeps on its own (summed when read), so that a fan-out on several
    /// loops does not bounce one cache line between cores once per subscriber.
    package let perLoop: [LoopCounters]

    /// One event loop's counters: written by that loop only, read from anywhere.
    package final class LoopCounters: Sendable {
        /// Open connections on this loop (how evenly they are spread).
        package let connections = Atomic<Int>(0)
        package let eventsSent = Atomic<Int>(0)
        package let bytesSent = Atomic<Int>(0)
        /// Keeps two loops' counters off one 64-byte cache line.
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    }

    package init(loops: Int = 1) {
        perLoop = (0..<max(1, loops)).map { _ in LoopCounters() }
    }

    /// One value of ``values``: its Prometheus name, labels, value, and whether it is a gauge (else a counter).
    public typealias Value = (name: String, labels: [(String, String)], value: Int, isGauge: Bool)

    /// A consistent-enough copy of every counter, by Prometheus name (the `# HELP` texts are kept with
    /// the rest of the metrics' names, where `/metrics` is rendered).
    public var values: [Value] {
        [
            ("diffstream_connections_open", [], connectionsOpen.load(ordering: .relaxed), true),
            ("diffstream_connections_accepted_total", [], connectionsAccepted.load(ordering: .relaxed), false),
            ("diffstream_connections_refused_total", [], connectionsRefused.load(ordering: .relaxed), false),
            ("diffstream_connections_refused_per_ip_total", [], connectionsRefusedPerAddress.load(ordering: .relaxed), false),
            ("diffstream_requests_total", [], requests.load(ordering: .relaxed), false),
            ("diffstream_bad_requests_total", [], badRequests.load(ordering: .relaxed), false),
            ("diffstream_timeouts_total", [], timeouts.load(ordering: .relaxed), false),
            ("diffstream_bytes_sent_total", [], perLoop.reduce(0) { $0 + $1.bytesSent.load(ordering: .relaxed) }, false),
            ("diffstream_event_streams_open", [], streamsOpen.load(ordering: .relaxed), true),
            ("diffstream_events_sent_total", [], perLoop.reduce(0) { $0 + $1.eventsSent.load(ordering: .relaxed) }, false),
            ("diffstream_stream_overflows_total", [], streamOverflows.load(ordering: .relaxed), false),
        ] + perLoop.enumerated().map { index, counters in
            ("diffstream_loop_connections_open", [("loop", "\(index)")], counters.connections.load(ordering: .relaxed), true)
        }
    }
}
