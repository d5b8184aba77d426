@testable import FeedStorage
import FuzzSupport

/// The store's files as recovery reads them (`LogFormat.scan`, then `StoreState.apply` as a restart
/// replays). The first input byte picks the form of the rest (modulo 3): any bytes after a valid log
/// header; any bytes as a whole file; or records framed here with valid lengths and CRC-32s (each a
/// 2-byte length and that many bytes, a zero length closing a group), so the bytes inside records are
/// fuzzed too, not only the framing a CRC would reject. Divided by 3, its lowest bit picks the format
/// of the header made here (0: the current one, 1: format 1). Scanning never crashes, and:
/// - the file is accounted for: `end`, the torn tail and the free space add up to its size; free space
///   is zero bytes, and a torn tail ends in a nonzero one;
/// - what a restart does to the file changes nothing read: the file cut at `end` (a torn tail dropped),
///   and, when nothing was damaged, with zeros after it (preallocated space), scans to the same entries;
/// - every intact record survives being written again, one group each, with no damage and no tail;
/// - replaying the records never crashes, and the state they leave survives a checkpoint: written as
///   `feed` records and an `end`, read back and replayed, it is the same feeds.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogScan(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let mode = input.first else { return 0 }
    let rest = input.dropFirst()
    let version: UInt16 = (mode / 3) % 2 == 0 ? LogFormat.formatVersion : 1
    let header = LogFormat.header(kind: .log, generation: 1, version: version)
    let bytes = switch mode % 3 {
    case 0: header + rest
    case 1: Array(rest)
    default: header + framed(Array(rest), after: header.count, generation: 1, version: version)
    }
    guard let scan = try? LogFormat.scan(bytes, kind: .log) else { return 0 }

    FuzzSupport.check(scan.end >= LogFormat.headerSize && scan.end + scan.tornTail + scan.freeSpace == bytes.count,
                      "end \(scan.end), torn \(scan.tornTail), free \(scan.freeSpace) for \(bytes.count) bytes")
    FuzzSupport.check(bytes.suffix(scan.freeSpace).allSatisfy { $0 == 0 }, "free space that is not zero")
    FuzzSupport.check(scan.tornTail == 0 || bytes[scan.end + scan.tornTail - 1] != 0, "a torn tail ending in a zero byte")

    // Zeros after the cut only where nothing was damaged: a damaged group's header may claim a body
    // that runs past `end` and whose CRC the added zeros happen to match.
    let damaged = scan.entries.contains { if case .damaged = $0 { true } else { false } }
    let padded = damaged ? [] : [Array(bytes.prefix(scan.end)) + [UInt8](repeating: 0, count: 300)]
    for cut in [Array(bytes.prefix(scan.end))] + padded {
        let again = try? LogFormat.scan(cut, kind: .log)
        FuzzSupport.check(again?.entries == scan.entries && again?.end == scan.end && again?.tornTail == 0,
                          "cutting the tail changed what is read")
    }

    let records = scan.entries.flatMap { entry -> [StoreRecord] in
        switch entry {
        case .record(let record): [record]
        case .damaged(let damaged): damaged.intact
        }
    }
    var rewritten = LogFormat.header(kind: .log, generation: 1)
    for record in records {
        var group = LogFormat.GroupEncoder()
        group.append(record)
        rewritten += group.finish(at: rewritten.count, generation: 1)
    }
    let reread = try? LogFormat.scan(rewritten, kind: .log)
    FuzzSupport.check(reread?.entries == records.map(LogFormat.Entry.record) && reread?.tornTail == 0 && reread?.freeSpace == 0,
                      "records do not survive being written again")

    var state = StoreState()
    for record in records { try? state.apply(record) }
    let feeds = state.storedFeeds
    var checkpoint = LogFormat.header(kind: .checkpoint, generation: 2)
    for feed in feeds {
        var group = LogFormat.GroupEncoder()
        group.append(.feed(feed))
        checkpoint += group.finish(at: checkpoint.count, generation: 2)
    }
    var end = LogFormat.GroupEncoder()
    end.append(.end(feeds: feeds.count))
    checkpoint += end.finish(at: checkpoint.count, generation: 2)
    var restored = StoreState()
    for entry in (try? LogFormat.scan(checkpoint, kind: .checkpoint))?.entries ?? [] {
        guard case .record(let record) = entry else { FuzzSupport.check(false, "a checkpoint written here reads as damaged"); continue }
        try? restored.apply(record)
    }
    FuzzSupport.check(restored.storedFeeds == feeds && restored.liveBytes == state.liveBytes, "the state does not survive a checkpoint")
    return 0
}

/// Groups of records with valid framing for a file of `generation` and `version` whose groups start at
/// offset `after`: each record a 2-byte length (big-endian) and its bytes, a zero length ending a group.
private func framed(_ input: [UInt8], after: Int, generation: Int, version: UInt16) -> [UInt8] {
    var file: [UInt8] = []
    var body = ByteWriter()
    func closeGroup() {
        guard !body.bytes.isEmpty else { return }
        var header = ByteWriter()
        header.u32(LogFormat.groupMarker)
        header.u32(UInt32(body.bytes.count))
        header.u32(CRC32.checksum(body.bytes))
        header.u32(0)
        header.patch32(LogFormat.headerCRC(header.bytes, at: 0, placedAt: after + file.count, generation: generation, version: version), at: 12)
        file += header.bytes + body.bytes
        body = ByteWriter()
    }
    var offset = 0
    while offset + 2 <= input.count {
        let length = Int(input[offset]) << 8 | Int(input[offset + 1])
        offset += 2
        guard length > 0 else { closeGroup(); continue }
        let record = Array(input[offset..<min(input.count, offset + length)])
        offset += record.count
        body.u32(UInt32(record.count))
        body.u32(CRC32.checksum(record))
        body.bytes += record
    }
    closeGroup()
    return file
}
