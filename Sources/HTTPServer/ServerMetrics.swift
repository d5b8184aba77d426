import Synchronization

/// Counters the server keeps for `/metrics`. Updated from the loop thread, read from anywhere.
public final class ServerMetrics: Sendable {
    let connectionsOpen = Atomic<Int>(0)
    let connectionsAccepted = Atomic<Int>(0)
    let connectionsRefused = Atomic<Int>(0)
    let connectionsRefusedPerAddress = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let streamsOpen = Atomic<Int>(0)
    let streamOverflows = Atomic<Int>(0)
    let timeouts = Atomic<Int>(0)
    let badRequests = Atomic<Int>(0)
    /// Counters each event loop keeps on its own (summed when read), so that a fan-out on several
    /// loops does not bounce one cache line between cores once per subscriber.
    let perLoop: [LoopCounters]

    /// One event loop's counters: written by that loop only, read from anywhere.
    final class LoopCounters: Sendable {
        /// Open connections on this loop (how evenly they are spread).
        let connections = Atomic<Int>(0)
        let eventsSent = Atomic<Int>(0)
        let bytesSent = Atomic<Int>(0)
        /// Keeps two loops' counters off one 64-byte cache line.
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
    }

    init(loops: Int = 1) {
        perLoop = (0..<max(1, loops)).map { _ in LoopCounters() }
    }

    /// A consistent-enough copy of every counter, by Prometheus name.
    public var values: [(name: String, help: String, type: String, value: Int)] {
        [
            ("diffstream_connections_open", "Open client connections.", "gauge", connectionsOpen.load(ordering: .relaxed)),
            ("diffstream_connections_accepted_total", "Connections accepted.", "counter", connectionsAccepted.load(ordering: .relaxed)),
            ("diffstream_connections_refused_total", "Connections refused at the connection cap.", "counter", connectionsRefused.load(ordering: .relaxed)),
            ("diffstream_connections_refused_per_ip_total", "Connections refused at the per-address cap (--max-connections-per-ip).", "counter",
             connectionsRefusedPerAddress.load(ordering: .relaxed)),
            ("diffstream_requests_total", "Requests answered.", "counter", requests.load(ordering: .relaxed)),
            ("diffstream_bad_requests_total", "Requests refused by the parser.", "counter", badRequests.load(ordering: .relaxed)),
            ("diffstream_timeouts_total", "Connections closed by a timeout.", "counter", timeouts.load(ordering: .relaxed)),
            ("diffstream_bytes_sent_total", "Bytes written to sockets.", "counter", perLoop.reduce(0) { $0 + $1.bytesSent.load(ordering: .relaxed) }),
            ("diffstream_event_streams_open", "Open event streams.", "gauge", streamsOpen.load(ordering: .relaxed)),
            ("diffstream_events_sent_total", "Events queued to event streams.", "counter", perLoop.reduce(0) { $0 + $1.eventsSent.load(ordering: .relaxed) }),
            ("diffstream_stream_overflows_total", "Event streams that fell behind their buffer limit.", "counter", streamOverflows.load(ordering: .relaxed)),
        ] + perLoop.enumerated().map { index, counters in
            ("diffstream_loop_connections_open{loop=\"\(index)\"}", "Open client connections on each event loop.", "gauge", counters.connections.load(ordering: .relaxed))
        }
    }
}
