// fanout-bench: opens N SSE subscribers, publishes P changes, and reports delivery latency
// (p50/p99/max), events delivered per second, missing events, the server's memory per connection
// and its CPU time per published change, and the CPU this tool itself used while the changes went
// out. Works against diffstream and against nginx + nchan. Reads every socket with one epoll loop.
//
//   fanout-bench --port 8080 --pid <server pid> --subscribers 1000 --publishes 20
//   fanout-bench --port 8090 --pid <nginx worker pid> --pid <another worker pid> --nchan ...
//   fanout-bench --poll --port <nginx's> --pid <nginx worker pid>… --origin-port 8080 --origin-pid <server pid> ...
//
// --poll: the subscribers read the feed's cacheable log through a cache (nginx in front of diffstream,
// Benchmarks/log-cache.sh) with LogReader, one request at a time each; the publishes go to the origin,
// whose CPU per publish is reported apart from the cache's (--pid), with the origin's requests per
// publish (its /metrics: the log route's request count).
//
// The last line, `RESULT key=value ...`, is for scripts (Benchmarks/run-fanout.sh).
//
// Each publish carries a marker `seq-<n>`; a subscriber has received publish n when the marker
// appears in its (decoded) stream. Latency is measured from just before the publish request is sent.
import Foundation
import CBenchShims
import EpollRuntime
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var host = "127.0.0.1"
    var port: UInt16 = 8080
    /// The server's processes (nginx: every worker); memory and CPU are summed over them.
    var pids: [Int32] = []
    var subscribers = 1000
    var publishes = 20
    var interval = 0.2
    var nchan = false
    var gzip = false
    var feed = "fanout"
    var items = 20
    var sources = 1
    var poll = false
    var originPort: UInt16?
    var originPIDs: [Int32] = []

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--host": host = iterator.next()!
            case "--port": port = UInt16(iterator.next()!)!
            case "--pid": pids.append(Int32(iterator.next()!)!)
            case "--subscribers": subscribers = Int(iterator.next()!)!
            case "--publishes": publishes = Int(iterator.next()!)!
            case "--interval": interval = Double(iterator.next()!)!
            case "--items": items = Int(iterator.next()!)!
            case "--sources": sources = Int(iterator.next()!)!
            case "--nchan": nchan = true
            case "--gzip": gzip = true
            case "--poll": poll = true
            case "--origin-port": originPort = UInt16(iterator.next()!)!
            case "--origin-pid": originPIDs.append(Int32(iterator.next()!)!)
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
    }
}

let options = Options(CommandLine.arguments)
signal(SIGPIPE, SIG_IGN)

func now() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// One blocking HTTP request on a fresh connection; returns the status code.
@MainActor func request(_ method: String, _ path: String, body: String = "") -> Int {
    let fd = connectTo(source: 1, blocking: true, port: options.originPort ?? options.port)
    defer { close(fd) }
    let text = "\(method) \(path) HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    _ = text.withCString { send(fd, $0, strlen($0), 0) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = recv(fd, &buffer, buffer.count, 0)
    guard count > 12 else { return 0 }
    return Int(String(decoding: buffer[9..<12], as: UTF8.self)) ?? 0
}

@MainActor func connectTo(source: Int, blocking: Bool, port: UInt16 = options.port) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr("127.0.0.\(source)")
    _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr(options.host)
    let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    if result != 0 {
        perror("connect")
        exit(1)
    }
    if !blocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    return fd
}

@MainActor func snapshotBody(_ sequence: Int) -> String {
    // One item changes per publish (an update) and one marker item moves to the front (a move).
    var items = (0..<options.items).map { #"{"id":"item-\#($0)","kind":"card","model":{"n":\#($0)}}"# }
    items.insert(#"{"id":"marker","kind":"card","model":{"seq":"seq-\#(sequence)"}}"#, at: sequence % (options.items + 1))
    return #"{"sections":[{"id":"s","model":null,"items":[\#(items.joined(separator: ","))]}]}"#
}

@MainActor func publishRequest(_ sequence: Int) -> (method: String, path: String, body: String) {
    options.nchan ? ("POST", "/pub/\(options.feed)", #"{"marker":"seq-\#(sequence)"}"#)
                  : ("PUT", "/feeds/\(options.feed)", snapshotBody(sequence))
}

/// Publishes and waits for the answer (the first publish, before any subscriber).
@MainActor func publish(_ sequence: Int) -> Int {
    let (method, path, body) = publishRequest(sequence)
    return request(method, path, body: body)
}

/// The origin's requests to the log route so far: the count of its request histogram's series whose
/// route ends with `/log` (docs/protocol.md, "Metrics"), read from its /metrics.
@MainActor func originLogRequests() -> Int {
    let fd = connectTo(source: 1, blocking: true, port: options.originPort ?? options.port)
    defer { close(fd) }
    let text = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    _ = text.withCString { send(fd, $0, strlen($0), 0) }
    var answer: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(fd, &chunk, chunk.count, 0)
        if count <= 0 { break }
        answer += chunk[0..<count]
    }
    var total = 0
    for line in String(decoding: answer, as: UTF8.self).split(separator: "\n")
    where line.hasPrefix("diffstream_http_request_duration_seconds_count{") && line.contains("/log\"") {
        total += Int(Double(line.split(separator: " ").last ?? "") ?? 0)
    }
    return total
}

func residentKiB(_ pid: Int32) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}

func cpuSeconds(_ pid: Int32) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

final class Subscriber {
    let fd: Int32
    var text: [UInt8] = []
    var headDone = false
    var decoder: GzipStreamDecoder?
    var received: [Int: Double] = [:]
    var scanFrom = 0
    var log: LogReader?

    init(fd: Int32) { self.fd = fd }

    func consume(_ bytes: ArraySlice<UInt8>, at time: Double) {
        if let log {
            let answers = log.consume(bytes)
            guard !answers.isEmpty else { return }  // the answer is not whole yet
            for (status, body) in answers {
                headDone = true
                if status == 200 { record(body, at: time) }
            }
            let text = log.request
            _ = text.withCString { send(fd, $0, strlen($0), 0) }  // one answer at a time: the next read
            return
        }
        var data = Array(bytes)
        if !headDone {
            text += data
            guard let end = find([13, 10, 13, 10], in: text, from: 0) else { return }
            headDone = true
            data = Array(text[(end + 4)...])
            text = []
        }
        if let decoder { data = decoder.decode(data) ?? [] }
        record(data, at: time)
    }

    func record(_ data: [UInt8], at time: Double) {
        if log != nil { text = []; scanFrom = 0 }  // each answer is whole
        text += data
        // Record every marker seen so far.
        let marker: [UInt8] = Array("seq-".utf8)
        while let index = find(marker, in: text, from: scanFrom) {
            var end = index + 4
            while end < text.count, text[end] >= 48, text[end] <= 57 { end += 1 }
            if end == text.count { break }  // the number may continue in the next read
            if let sequence = Int(String(decoding: text[(index + 4)..<end], as: UTF8.self)), received[sequence] == nil {
                received[sequence] = time
            }
            scanFrom = end
        }
        if text.count > 1 << 16 {
            text.removeFirst(scanFrom)
            scanFrom = 0
        }
    }
}

func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
    guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
    var index = start
    while index <= haystack.count - needle.count {
        if haystack[index] == needle[0] && haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
        index += 1
    }
    return nil
}

// 1. The feed.
if !options.nchan {
    let status = publish(0)
    guard status == 200 || status == 201 else {
        FileHandle.standardError.write(Data("could not create the feed: HTTP \(status)\n".utf8))
        exit(1)
    }
}
let rssBefore = options.pids.map(residentKiB).reduce(0, +)

// 2. Subscribers.
var subscribers: [Subscriber] = []
let path = options.nchan ? "/sub/\(options.feed)" : "/feeds/\(options.feed)/events"
for index in 0..<options.subscribers {
    let fd = connectTo(source: 1 + index % max(1, options.sources), blocking: false)
    let subscriber = Subscriber(fd: fd)
    if options.gzip { subscriber.decoder = GzipStreamDecoder() }
    if options.poll { subscriber.log = LogReader(feed: options.feed) }
    let text = subscriber.log?.request ?? "GET \(path) HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\(options.gzip ? "Accept-Encoding: gzip\r\n" : "")\r\n"
    _ = text.withCString { send(fd, $0, strlen($0), 0) }
    subscribers.append(subscriber)
}
// One epoll set for every subscriber (level-triggered; the event's data is the subscriber's index),
// so that a ready socket costs O(1) to find however many are idle.
let epollFD = epoll_create1(0)
for (index, subscriber) in subscribers.enumerated() {
    var event = epoll_event()
    event.events = bench_EPOLLIN()
    event.data.u64 = UInt64(index)
    _ = epoll_ctl(epollFD, Int32(EPOLL_CTL_ADD), subscriber.fd, &event)
}
var buffer = [UInt8](repeating: 0, count: 256 * 1024)
let readyEvents = UnsafeMutablePointer<epoll_event>.allocate(capacity: 1024)

/// The publish in flight: its request is sent without waiting for the answer, whose socket is read by
/// the same epoll loop as the subscribers'. So the tool reads deliveries while a server is still
/// answering its publisher (a server that answers after its fan-out is not charged for a tool that
/// would otherwise sit blocked in `recv` meanwhile).
final class Publisher {
    static let token = UInt64.max
    var fd: Int32 = -1
    var answer: [UInt8] = []
    var statuses: [Int] = []
}
let publisher = Publisher()

@MainActor func startPublish(_ sequence: Int) {
    let (method, path, body) = publishRequest(sequence)
    let fd = connectTo(source: 1, blocking: true, port: options.originPort ?? options.port)
    let text = "\(method) \(path) HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    _ = text.withCString { send(fd, $0, strlen($0), 0) }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    var event = epoll_event()
    event.events = bench_EPOLLIN()
    event.data.u64 = Publisher.token
    _ = epoll_ctl(epollFD, Int32(EPOLL_CTL_ADD), fd, &event)
    publisher.fd = fd
    publisher.answer = []
}

@MainActor func readPublishAnswer() {
    let count = recv(publisher.fd, &buffer, buffer.count, 0)
    if count > 0 {
        publisher.answer += buffer[0..<count]
        return
    }
    _ = epoll_ctl(epollFD, Int32(EPOLL_CTL_DEL), publisher.fd, nil)
    close(publisher.fd)
    publisher.fd = -1
    let status = publisher.answer.count > 12 ? Int(String(decoding: publisher.answer[9..<12], as: UTF8.self)) ?? 0 : 0
    publisher.statuses.append(status)
    if status >= 300 || status == 0 { FileHandle.standardError.write(Data("publish: HTTP \(status)\n".utf8)) }
}

@MainActor func pump(until deadline: Double, done: () -> Bool) {
    while now() < deadline && !done() {
        let ready = epoll_wait(epollFD, readyEvents, 1024, 50)
        if ready <= 0 { continue }
        let time = now()
        for slot in 0..<Int(ready) {
            if readyEvents[slot].data.u64 == Publisher.token {
                readPublishAnswer()
                continue
            }
            let index = Int(readyEvents[slot].data.u64)
            let count = recv(subscribers[index].fd, &buffer, buffer.count, 0)
            if count > 0 {
                subscribers[index].consume(buffer[0..<count], at: time)
            } else {
                _ = epoll_ctl(epollFD, Int32(EPOLL_CTL_DEL), subscribers[index].fd, nil)  // closed: stop watching
            }
        }
    }
}

func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

// Wait until every subscriber has its response head (and, for diffstream, its snapshot).
pump(until: now() + 60) { subscribers.allSatisfy { $0.headDone && (options.nchan || $0.received[0] != nil) } }
let connected = subscribers.filter { $0.headDone }.count
let rssConnected = options.pids.map(residentKiB).reduce(0, +)

// 3. Publishes.
var published: [Int: Double] = [:]
let cpuBefore = options.pids.map(cpuSeconds).reduce(0, +)
let originCPUBefore = options.originPIDs.map(cpuSeconds).reduce(0, +)
let originRequestsBefore = options.poll ? originLogRequests() : 0
let toolCPUBefore = ownCPUSeconds()
let started = now()
for sequence in 1...options.publishes {
    let time = now()
    startPublish(sequence)
    published[sequence] = time
    pump(until: now() + options.interval) { false }
    pump(until: now() + 10) { publisher.fd < 0 }  // the answer normally came long before
}
pump(until: now() + 10) { subscribers.allSatisfy { $0.received.count >= options.publishes + (options.nchan ? 0 : 1) } }
let cpuAfter = options.pids.map(cpuSeconds).reduce(0, +)
let originCPUAfter = options.originPIDs.map(cpuSeconds).reduce(0, +)
let originRequests = options.poll ? originLogRequests() - originRequestsBefore : 0
let toolCPU = ownCPUSeconds() - toolCPUBefore
let toolWall = now() - started

// 4. Figures.
var latencies: [Double] = []
var missing = 0
var lastDelivery = started
for subscriber in subscribers {
    for sequence in 1...options.publishes {
        if let received = subscriber.received[sequence] {
            latencies.append((received - published[sequence]!) * 1000)
            lastDelivery = max(lastDelivery, received)
        } else {
            missing += 1
        }
    }
}
latencies.sort()
@MainActor func percentile(_ p: Double) -> Double { latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
let perConnection = connected > 0 ? Double(rssConnected - rssBefore) / Double(connected) : .nan
print("target: \(options.nchan ? "nginx+nchan" : "diffstream")\(options.gzip ? " (gzip)" : "")  subscribers: \(options.subscribers) (connected \(connected))  publishes: \(options.publishes)")
print(String(format: "latency ms: p50 %.1f  p99 %.1f  max %.1f", percentile(0.5), percentile(0.99), latencies.last ?? .nan))
print(String(format: "delivered: %d  missing: %d  events/s: %.0f", latencies.count, missing, Double(latencies.count) / max(0.001, lastDelivery - started)))
let serverCPUPerBatch = (cpuAfter - cpuBefore) * 1000 / Double(options.publishes)
if !options.pids.isEmpty {
    print(String(format: "server RSS: %.1f MiB before, %.1f MiB connected: %.2f KiB per connection", Double(rssBefore) / 1024, Double(rssConnected) / 1024, perConnection))
    print(String(format: "server CPU: %.1f ms per publish", serverCPUPerBatch))
}
let originCPUPerBatch = (originCPUAfter - originCPUBefore) * 1000 / Double(options.publishes)
let originRequestsPerBatch = Double(originRequests) / Double(options.publishes)
if options.poll {
    print(String(format: "origin: %.2f ms CPU per publish, %.2f log requests per publish", originCPUPerBatch, originRequestsPerBatch))
    var statuses: [Int: Int] = [:]
    for subscriber in subscribers { for (status, count) in subscriber.log?.statuses ?? [:] { statuses[status, default: 0] += count } }
    print("answers by status: " + statuses.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
}
// The tool's own CPU while the changes went out: near 100 % of one core would mean it, not the
// server, sets the pace.
print(String(format: "load tool CPU: %.2f s over %.2f s (%.0f %% of one core), %.1f ms per publish", toolCPU, toolWall, toolCPU / max(0.001, toolWall) * 100,
             toolCPU * 1000 / Double(options.publishes)))
let serverName = options.poll ? "diffstream-log-cache" : options.nchan ? "nchan" : (options.gzip ? "diffstream-gzip" : "diffstream")
print("RESULT server=\(serverName) " + String(format: "subscribers=%d p50=%.2f p99=%.2f min=%.2f delivered=%d missing=%d cpu_ms_per_batch=%.2f kib_per_subscriber=%.3f tool_cpu_s=%.2f tool_wall_s=%.2f tool_cpu_ms_per_batch=%.2f origin_cpu_ms_per_batch=%.2f origin_requests_per_batch=%.2f",
             options.subscribers, percentile(0.5), percentile(0.99), latencies.first ?? .nan, latencies.count, missing, serverCPUPerBatch, perConnection, toolCPU, toolWall,
             toolCPU * 1000 / Double(options.publishes), originCPUPerBatch, originRequestsPerBatch))
for subscriber in subscribers { close(subscriber.fd) }
