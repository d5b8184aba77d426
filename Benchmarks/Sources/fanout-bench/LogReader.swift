// fanout-bench --poll: one subscriber's reads of a feed's cacheable log (`GET /feeds/F/log`, through a
// cache such as nginx), one request at a time on a keep-alive connection: the snapshot, then the
// batches after `next`, then live reads with the server's cursor (docs/protocol.md, "Reads through HTTP
// caches"). It parses each answer (Content-Length or chunked), and hands its body to the caller.

final class LogReader {
    let feed: String
    private var input: [UInt8] = []
    private(set) var next: String?
    private(set) var cursor: String?
    private(set) var upToDate = false
    /// Answers by status.
    private(set) var statuses: [Int: Int] = [:]

    init(feed: String) { self.feed = feed }

    /// The next request: the snapshot, the log after `next`, or a live read at the head.
    var request: String {
        var path = "/feeds/\(feed)/log"
        if let next {
            path += "?after=\(next)"
            if upToDate { path += "&live=1" + (cursor.map { "&cursor=\($0)" } ?? "") }
        }
        return "GET \(path) HTTP/1.1\r\nHost: bench\r\nAccept: application/json\r\n\r\n"
    }

    /// Takes bytes read; returns the bodies of the answers they complete (each then moves the position).
    func consume(_ bytes: ArraySlice<UInt8>) -> [(status: Int, body: [UInt8])] {
        input += bytes
        var answers: [(Int, [UInt8])] = []
        while let (status, body, used) = parse() {
            input.removeFirst(used)
            statuses[status, default: 0] += 1
            answers.append((status, body))
            if status == 200 {
                if let value = string(after: #""next":""#, in: body) { next = value }
                if let value = string(after: #""cursor":""#, in: body) { cursor = value }
                upToDate = find(Array(#""upToDate":true"#.utf8), in: body, from: 0) != nil
            } else if status == 409 {
                next = nil  // start over from the snapshot
                upToDate = false
            }
        }
        return answers
    }

    /// One whole answer at the start of `input`: its status, its body and the bytes it took.
    private func parse() -> (Int, [UInt8], Int)? {
        guard let end = find([13, 10, 13, 10], in: input, from: 0), input.count > 12 else { return nil }
        let head = String(decoding: input[0..<end], as: UTF8.self).lowercased()
        let status = Int(String(decoding: input[9..<12], as: UTF8.self)) ?? 0
        let start = end + 4
        if let range = head.range(of: "content-length:") {
            let digits = head[range.upperBound...].drop { $0 == " " }.prefix { $0.isNumber }
            let length = Int(digits) ?? 0
            guard input.count >= start + length else { return nil }
            return (status, Array(input[start..<(start + length)]), start + length)
        }
        guard head.contains("transfer-encoding: chunked") else { return (status, [], start) }
        var body: [UInt8] = []
        var offset = start
        while true {
            guard let line = find([13, 10], in: input, from: offset) else { return nil }
            let size = Int(String(decoding: input[offset..<line], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
            let dataStart = line + 2
            guard input.count >= dataStart + size + 2 else { return nil }
            if size == 0 { return (status, body, dataStart + 2) }
            body += input[dataStart..<(dataStart + size)]
            offset = dataStart + size + 2
        }
    }

    private func string(after key: String, in body: [UInt8]) -> String? {
        let needle = Array(key.utf8)
        guard let index = find(needle, in: body, from: 0) else { return nil }
        let start = index + needle.count
        guard let end = body[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: body[start..<end], as: UTF8.self)
    }
}
