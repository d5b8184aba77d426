/// The bytes of the log store's files (``LogFeedStore``).
///
/// A file starts with a 32-byte header: the magic `DiffStrm`, the format version (UInt16), the file's
/// kind (UInt16: 1 a log, 2 a checkpoint), 4 reserved bytes, its generation (UInt64), 4 reserved bytes
/// and the CRC-32 of the 28 bytes before. Then come groups, one per commit (or per feed in a
/// checkpoint): a 16-byte group header (the marker `DSG1`, the body's length, the body's CRC-32, and the
/// header's CRC-32), then the body: records, each its length (UInt32), its CRC-32 and its bytes
/// (``StoreRecord``). All integers are little-endian.
///
/// The header's CRC-32 covers its first 12 bytes, then (format 2) the group's offset in the file and
/// the file's generation, as two UInt64s that are not stored: a group is intact only where it was
/// written. So bytes shaped as a group inside a record (a client's snapshot can hold any bytes) never
/// read as one when a crash tears the group around them, nor does a group copied from another file.
/// Format 1 (without the offset and generation) is still read; its last log is not appended to.
///
/// A group is written with one `pwrite` and made durable with one `fdatasync`, so it is all or
/// nothing: a crash can only tear the last group of the newest log, which was never acknowledged.
/// A log is preallocated with zero bytes ahead of its groups (so a commit's `fdatasync` has no file
/// size to write); zero bytes after the last group are free space, not a torn tail.
/// The record CRCs inside a group name the feeds whose bytes changed when a group in the middle is
/// damaged.
enum LogFormat {
    static let formatVersion: UInt16 = 2
    /// The versions this build reads.
    static let readableVersions: ClosedRange<UInt16> = 1...2
    static let magic = Array("DiffStrm".utf8)
    static let headerSize = 32
    static let groupHeaderSize = 16
    static let groupMarker: UInt32 = 0x3147_5344  // "DSG1" in file order

    enum FileKind: UInt16 {
        case log = 1, checkpoint = 2
    }

    /// The header of a new file.
    static func header(kind: FileKind, generation: Int, version: UInt16 = formatVersion) -> [UInt8] {
        var writer = ByteWriter(capacity: headerSize)
        writer.bytes.append(contentsOf: magic)
        writer.u16(version)
        writer.u16(kind.rawValue)
        writer.u32(0)
        writer.u64(UInt64(generation))
        writer.u32(0)
        writer.u32(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// Why a file's header is not one this build reads.
    struct HeaderProblem: Error {
        var reason: String
    }

    /// Checks a file's header; returns its generation and format version.
    static func readHeader(_ bytes: [UInt8], kind: FileKind) throws(HeaderProblem) -> (generation: Int, version: UInt16) {
        guard bytes.count >= headerSize else { throw HeaderProblem(reason: "it is \(bytes.count) bytes long, shorter than a header") }
        guard Array(bytes[0..<8]) == magic else { throw HeaderProblem(reason: "it does not start with 'DiffStrm': not a file of this store") }
        var reader = ByteReader(bytes, from: 8, to: headerSize)
        do {
            let version = try reader.u16()
            let fileKind = try reader.u16()
            _ = try reader.u32()
            let generation = try reader.u64()
            _ = try reader.u32()
            let crc = try reader.u32()
            guard crc == CRC32.checksum(bytes[0..<28]) else { throw HeaderProblem(reason: "its header fails its CRC-32") }
            guard readableVersions.contains(version) else {
                throw HeaderProblem(reason: "its format version is \(version), and this build reads versions \(readableVersions.lowerBound) to \(readableVersions.upperBound)")
            }
            guard fileKind == kind.rawValue else { throw HeaderProblem(reason: "its header says kind \(fileKind), not \(kind)") }
            return (Int(truncatingIfNeeded: generation), version)
        } catch let problem as HeaderProblem {
            throw problem
        } catch {
            throw HeaderProblem(reason: "its header is cut short")
        }
    }

    /// Builds one group: records appended, then ``finish()``.
    struct GroupEncoder {
        private var writer: ByteWriter
        private(set) var records = 0

        init(capacity: Int = 4096) {
            writer = ByteWriter(capacity: capacity)
            writer.bytes.append(contentsOf: repeatElement(0, count: groupHeaderSize))
        }

        var isEmpty: Bool { records == 0 }
        var count: Int { writer.bytes.count }

        mutating func append(_ record: StoreRecord) {
            let start = writer.bytes.count
            writer.u32(0)
            writer.u32(0)
            record.encode(into: &writer)
            writer.patch32(UInt32(writer.bytes.count - start - 8), at: start)
            writer.patch32(CRC32.checksum(writer.bytes[(start + 8)...]), at: start + 4)
            records += 1
        }

        /// The group's bytes, its header filled in for the place it is written: `offset` in the file of
        /// generation `generation` (in a file of format `version`).
        func finish(at offset: Int, generation: Int, version: UInt16 = formatVersion) -> [UInt8] {
            var done = writer
            done.patch32(groupMarker, at: 0)
            done.patch32(UInt32(done.bytes.count - groupHeaderSize), at: 4)
            done.patch32(CRC32.checksum(done.bytes[groupHeaderSize...]), at: 8)
            done.patch32(headerCRC(done.bytes, at: 0, placedAt: offset, generation: generation, version: version), at: 12)
            return done.bytes
        }
    }

    /// The CRC-32 a group header at `start` of `bytes` carries, for a group at `offset` in its file.
    static func headerCRC(_ bytes: [UInt8], at start: Int, placedAt offset: Int, generation: Int, version: UInt16) -> UInt32 {
        guard version >= 2 else { return CRC32.checksum(bytes[start..<(start + 12)]) }
        var covered = ByteWriter(capacity: 28)
        covered.bytes.append(contentsOf: bytes[start..<(start + 12)])
        covered.u64(UInt64(bitPattern: Int64(offset)))
        covered.u64(UInt64(bitPattern: Int64(generation)))
        return CRC32.checksum(covered.bytes)
    }

    /// A group in the middle of a file whose bytes changed.
    struct DamagedGroup: Equatable {
        var offset: Int
        /// The feeds of records whose bytes changed, where the record still says which feed it is for;
        /// empty when that cannot be told (then nobody knows which feeds the group held).
        var feeds: [String]
        /// The group's records that are still intact (their own CRC-32 holds).
        var intact: [StoreRecord] = []
        var reason: String
    }

    /// One entry of a file, in order.
    enum Entry: Equatable {
        case record(StoreRecord)
        case damaged(DamagedGroup)
    }

    /// What a file holds: the records of its intact groups and its damaged groups, in order, where the
    /// intact part ends, and what is wrong after it.
    struct Scan {
        var generation: Int
        var version: UInt16
        var entries: [Entry] = []
        /// The offset just after the last intact group: where the next group is written.
        var end: Int
        /// Bytes after `end` that hold no intact group, up to the last nonzero one: a write a crash cut
        /// short (or bytes appended).
        var tornTail = 0
        /// The zero bytes after those: space preallocated for the next groups.
        var freeSpace = 0
    }

    /// Reads a whole file.
    /// - Complexity: O(n); a damaged group costs a forward search for the next intact one.
    static func scan(_ bytes: [UInt8], kind: FileKind) throws(HeaderProblem) -> Scan {
        let (generation, version) = try readHeader(bytes, kind: kind)
        var scan = Scan(generation: generation, version: version, end: headerSize)
        let file = File(bytes: bytes, generation: generation, version: version)
        var offset = headerSize
        while offset < bytes.count {
            if let next = file.intactGroup(at: offset) {
                do {
                    scan.entries += try records(bytes, body: (offset + groupHeaderSize)..<next).map(Entry.record)
                } catch {
                    scan.entries.append(.damaged(DamagedGroup(offset: offset, feeds: [], reason: "the group at offset \(offset): \(error.reason)")))
                }
                offset = next
                scan.end = next
                continue
            }
            // Not an intact group: a torn tail when no intact group follows, else damage in the middle.
            guard let resume = file.nextIntactGroup(after: offset) else {
                // The torn part ends at its last nonzero byte; the zeros after it are free space.
                let used = (bytes[offset...].lastIndex { $0 != 0 } ?? offset - 1) + 1
                scan.tornTail = used - offset
                scan.freeSpace = bytes.count - used
                break
            }
            scan.entries.append(.damaged(file.describeDamage(at: offset, upTo: resume)))
            offset = resume
        }
        return scan
    }

    /// A file's bytes with what its group headers' CRCs cover besides themselves.
    struct File {
        var bytes: [UInt8]
        var generation: Int
        var version: UInt16

        /// Whether a group header at `offset` holds its CRC for this place in this file.
        func headerHolds(at offset: Int) -> Bool {
            var reader = ByteReader(bytes, from: offset + 12, to: offset + groupHeaderSize)
            guard let crc = try? reader.u32() else { return false }
            return crc == headerCRC(bytes, at: offset, placedAt: offset, generation: generation, version: version)
        }

        /// The end of the intact group at `offset`, or nil.
        func intactGroup(at offset: Int) -> Int? {
            guard bytes.count - offset >= groupHeaderSize else { return nil }
            var reader = ByteReader(bytes, from: offset, to: offset + groupHeaderSize)
            guard let marker = try? reader.u32(), marker == groupMarker,
                  let length = try? reader.u32(), let bodyCRC = try? reader.u32(), headerHolds(at: offset) else { return nil }
            let end = offset + groupHeaderSize + Int(length)
            guard end <= bytes.count, bodyCRC == CRC32.checksum(bytes[(offset + groupHeaderSize)..<end]) else { return nil }
            return end
        }

        func nextIntactGroup(after offset: Int) -> Int? {
            let first = UInt8(groupMarker & 0xFF)
            var position = offset + 1
            while position + groupHeaderSize <= bytes.count {
                if bytes[position] == first, intactGroup(at: position) != nil { return position }
                position += 1
            }
            return nil
        }
    }

    private static func records(_ bytes: [UInt8], body: Range<Int>) throws(StoreRecord.Malformed) -> [StoreRecord] {
        var found: [StoreRecord] = []
        var offset = body.lowerBound
        while offset < body.upperBound {
            var reader = ByteReader(bytes, from: offset, to: body.upperBound)
            guard let length = try? reader.u32(), let crc = try? reader.u32(), Int(length) <= reader.remaining else {
                throw StoreRecord.Malformed(reason: "a record's length runs past its group")
            }
            let start = offset + 8, end = offset + 8 + Int(length)
            guard crc == CRC32.checksum(bytes[start..<end]) else { throw StoreRecord.Malformed(reason: "a record fails its CRC-32") }
            var recordReader = ByteReader(bytes, from: start, to: end)
            found.append(try StoreRecord.decode(&recordReader))
            offset = end
        }
        return found
    }

}

extension LogFormat.File {
    /// What can be said of a damaged group: which feeds' records no longer match their CRC.
    func describeDamage(at offset: Int, upTo resume: Int) -> LogFormat.DamagedGroup {
        typealias DamagedGroup = LogFormat.DamagedGroup
        var reader = ByteReader(bytes, from: offset, to: resume)
        guard let marker = try? reader.u32(), marker == LogFormat.groupMarker, let length = try? reader.u32(), (try? reader.u32()) != nil,
              headerHolds(at: offset), offset + LogFormat.groupHeaderSize + Int(length) == resume else {
            return DamagedGroup(offset: offset, feeds: [], reason: "\(resume - offset) bytes at offset \(offset) are not an intact group")
        }
        var feeds: [String] = []
        var intact: [StoreRecord] = []
        var position = offset + LogFormat.groupHeaderSize
        while position + 8 <= resume {
            var header = ByteReader(bytes, from: position, to: resume)
            guard let length = try? header.u32(), let crc = try? header.u32(), Int(length) <= header.remaining else { break }
            let start = position + 8, end = start + Int(length)
            if crc != CRC32.checksum(bytes[start..<end]) {
                var name = ByteReader(bytes, from: start + 1, to: end)
                if let count = try? name.u16(), let raw = try? name.take(Int(count)), let text = String(validating: raw, as: UTF8.self), !text.isEmpty {
                    feeds.append(text)
                } else {
                    return DamagedGroup(offset: offset, feeds: [], reason: "a record at offset \(position) is damaged and its feed cannot be told")
                }
            } else {
                var record = ByteReader(bytes, from: start, to: end)
                guard let decoded = try? StoreRecord.decode(&record) else {
                    return DamagedGroup(offset: offset, feeds: [], reason: "a record at offset \(position) does not decode")
                }
                intact.append(decoded)
            }
            position = end
        }
        let reason = "records of the group at offset \(offset) fail their CRC-32"
        guard position == resume, !feeds.isEmpty else {
            return DamagedGroup(offset: offset, feeds: [], reason: "the group at offset \(offset) fails its CRC-32 and its records cannot be told apart")
        }
        return DamagedGroup(offset: offset, feeds: feeds, intact: intact, reason: reason)
    }
}
