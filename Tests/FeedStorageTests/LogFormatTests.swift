import Testing
import TestSupport
@testable import FeedStorage

/// Bytes in, records out: groups, a torn tail cut at every byte, and damage in the middle.
struct LogFormatTests {
    static let records: [StoreRecord] = [
        .put(.init(name: "news", history: "00000000000000aa", version: 1, snapshot: .full(Array("snapshot one".utf8)), batch: nil, keepFrom: 2, viewState: nil)),
        .put(.init(name: "news", history: "00000000000000aa", version: 2, snapshot: .delta(SnapshotDelta(prefix: 9, suffix: 0, middle: Array("two".utf8))),
                   batch: StoredBatch(version: 2, bytes: Array("event 2".utf8)), keepFrom: 1, viewState: Array("{\"x\":1}".utf8))),
        .viewState(name: "ünïcode feed", bytes: [0, 1, 2]),
        .delete(name: "gone"),
        .feed(StoredFeed(name: "whole", history: "00000000000000bb", version: 7, snapshot: [9, 9],
                         batches: [StoredBatch(version: 6, bytes: [6]), StoredBatch(version: 7, bytes: [7])], viewState: [1])),
        .end(feeds: 1),
    ]

    /// A log file of one group per record.
    func file(_ records: [StoreRecord] = Self.records) -> (bytes: [UInt8], groupStarts: [Int]) {
        var bytes = LogFormat.header(kind: .log, generation: 3)
        var starts: [Int] = []
        for record in records {
            var group = LogFormat.GroupEncoder()
            group.append(record)
            starts.append(bytes.count)
            bytes += group.finish(at: bytes.count, generation: 3)
        }
        return (bytes, starts)
    }

    func recordsOf(_ scan: LogFormat.Scan) -> [StoreRecord] {
        scan.entries.compactMap { if case .record(let record) = $0 { record } else { nil } }
    }

    @Test func everyRecordKindRoundTrips() throws {
        let scan = try LogFormat.scan(file().bytes, kind: .log)
        #expect(scan.generation == 3 && scan.tornTail == 0)
        #expect(recordsOf(scan) == Self.records)
    }

    @Test func severalRecordsInOneGroupComeBackInOrder() throws {
        var group = LogFormat.GroupEncoder()
        for record in Self.records { group.append(record) }
        let bytes = LogFormat.header(kind: .checkpoint, generation: 1) + group.finish(at: LogFormat.headerSize, generation: 1)
        #expect(recordsOf(try LogFormat.scan(bytes, kind: .checkpoint)) == Self.records)
    }

    /// A crash can leave any prefix of the last group: the earlier groups are all there, no damage.
    @Test func aTornLastGroupIsATornTailAtEveryCut() throws {
        let (bytes, starts) = file()
        let last = starts[starts.count - 1]
        for cut in last..<bytes.count {
            let scan = try LogFormat.scan(Array(bytes.prefix(cut)), kind: .log)
            #expect(recordsOf(scan) == Array(Self.records.dropLast()), "cut at \(cut)")
            // Zero bytes at the cut are free space, whatever comes before them is torn (the marker is not 0).
            #expect(scan.end == last && (scan.tornTail > 0) == (cut > last) && scan.tornTail + scan.freeSpace == cut - last, "cut at \(cut)")
            #expect(!scan.entries.contains { if case .damaged = $0 { true } else { false } })
        }
    }

    /// Logs are preallocated: zeros after the last group are free space, and a group cut short in them
    /// is a torn tail as long as its nonzero bytes.
    @Test func zerosAfterTheLastGroupAreFreeSpaceAndATornGroupInThemIsATornTail() throws {
        let (bytes, starts) = file()
        let last = starts[starts.count - 1]
        let clean = try LogFormat.scan(bytes + [UInt8](repeating: 0, count: 5000), kind: .log)
        #expect(recordsOf(clean) == Self.records && clean.end == bytes.count && clean.tornTail == 0 && clean.freeSpace == 5000)
        let torn = Array(bytes.prefix(last + 20)) + [UInt8](repeating: 0, count: 5000)
        let scan = try LogFormat.scan(torn, kind: .log)
        let used = try #require(bytes[..<(last + 20)].lastIndex { $0 != 0 }) + 1
        #expect(recordsOf(scan) == Array(Self.records.dropLast()) && scan.end == last)
        #expect(scan.tornTail == used - last && scan.freeSpace == torn.count - used)
    }

    @Test(arguments: [3, 17, 99] as [UInt64])
    func garbageAfterTheLastGroupIsATornTail(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let (bytes, _) = file()
        // Ending in a nonzero byte: zeros at the end would be free space, not part of the torn tail.
        let garbage = (0..<Int.random(in: 0...3000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) } + [UInt8.random(in: 1...255, using: &rng)]
        let scan = try LogFormat.scan(bytes + garbage, kind: .log)
        #expect(recordsOf(scan) == Self.records && scan.end == bytes.count && scan.tornTail == garbage.count)
    }

    /// Records whose CRC holds but whose numbers no store writes (a version below 1, a negative count)
    /// are damage, named with the field, not values to do arithmetic with at replay.
    @Test(arguments: [
        (StoreRecord.put(.init(name: "f", history: "h", version: Int.min, snapshot: .full([1]), batch: nil, keepFrom: 0, viewState: nil)), "version"),
        (.put(.init(name: "f", history: "h", version: 0, snapshot: .full([1]), batch: nil, keepFrom: 0, viewState: nil)), "version"),
        (.put(.init(name: "f", history: "h", version: 2, snapshot: .delta(SnapshotDelta(prefix: -5, suffix: 0, middle: [])), batch: nil, keepFrom: 0, viewState: nil)), "change keeps"),
        (.feed(StoredFeed(name: "f", history: "h", version: -1, snapshot: [], batches: [], viewState: nil)), "version"),
        (.feed(StoredFeed(name: "f", history: "h", version: 3, snapshot: [], batches: [StoredBatch(version: 0, bytes: [])], viewState: nil)), "batch version"),
        (.end(feeds: -2), "counts -2 feeds"),
    ])
    func numbersNoStoreWritesAreDamage(record: StoreRecord, field: String) throws {
        let scan = try LogFormat.scan(file([record, .delete(name: "after")]).bytes, kind: .log)
        guard case .damaged(let damaged) = scan.entries.first else { Issue.record("\(scan.entries)"); return }
        #expect(damaged.reason.contains(field), "\(damaged.reason)")
        #expect(scan.entries.last == .record(.delete(name: "after")))
    }

    /// A group's header CRC covers where it was written: the same bytes at another offset, or in a file
    /// of another generation, are not a group.
    @Test func aGroupReadsAsOneOnlyWhereItWasWritten() throws {
        let (bytes, starts) = file()
        let copied = bytes + bytes[starts[3]..<starts[4]]
        let scan = try LogFormat.scan(copied, kind: .log)
        #expect(recordsOf(scan) == Self.records && scan.tornTail == starts[4] - starts[3])
        let elsewhere = LogFormat.header(kind: .log, generation: 4) + bytes.dropFirst(LogFormat.headerSize)
        let moved = try LogFormat.scan(elsewhere, kind: .log)
        #expect(moved.entries.isEmpty && moved.end == LogFormat.headerSize && moved.tornTail + moved.freeSpace == bytes.count - LogFormat.headerSize)
    }

    /// A client's bytes shaped as a group (here a delete of another feed) inside a record, in a last
    /// group whose first bytes a crash lost: in format 2 a torn tail, as it is; in format 1 they read
    /// as an intact group after damage, so a restart refused to start, or set aside and applied it.
    @Test(arguments: [LogFormat.formatVersion, 1])
    func bytesShapedAsAGroupInATornGroupAreATornTail(version: UInt16) throws {
        var bytes = LogFormat.header(kind: .log, generation: 2, version: version)
        var first = LogFormat.GroupEncoder()
        first.append(Self.records[0])
        bytes += first.finish(at: bytes.count, generation: 2, version: version)
        let start = bytes.count
        var forged = LogFormat.GroupEncoder()
        forged.append(.delete(name: "victim"))
        // Placed for offset 0: the attacker cannot know where in the log its bytes will land.
        let inner = forged.finish(at: 0, generation: 2, version: version)
        var last = LogFormat.GroupEncoder()
        last.append(.viewState(name: "f", bytes: inner))
        bytes += last.finish(at: start, generation: 2, version: version)
        for index in start..<(start + 16) { bytes[index] = 0 }  // the group's first bytes never made it
        let scan = try LogFormat.scan(bytes, kind: .log)
        if version >= 2 {
            #expect(recordsOf(scan) == [Self.records[0]] && scan.end == start && scan.tornTail == bytes.count - start)
        } else {
            #expect(scan.entries.contains(.record(.delete(name: "victim"))), "format 1 read the forged group")
        }
    }

    @Test func aChangedByteInARecordInTheMiddleNamesItsFeedAndKeepsTheRest() throws {
        var group = LogFormat.GroupEncoder()
        group.append(Self.records[0])
        group.append(.viewState(name: "other", bytes: Array("state".utf8)))
        var bytes = LogFormat.header(kind: .log, generation: 1)
        let start = bytes.count
        bytes += group.finish(at: start, generation: 1)
        var after = LogFormat.GroupEncoder()
        after.append(.delete(name: "after"))
        bytes += after.finish(at: bytes.count, generation: 1)
        let marker = try #require(bytes.firstRange(of: Array("snapshot one".utf8)))
        bytes[marker.lowerBound] ^= 0xFF
        let scan = try LogFormat.scan(bytes, kind: .log)
        #expect(scan.entries.count == 2)
        guard case .damaged(let damaged) = scan.entries[0] else { Issue.record("\(scan.entries)"); return }
        #expect(damaged.offset == start && damaged.feeds == ["news"])
        #expect(damaged.intact == [.viewState(name: "other", bytes: Array("state".utf8))])
        #expect(scan.entries[1] == .record(.delete(name: "after")) && scan.tornTail == 0)
    }

    @Test func aChangedGroupHeaderInTheMiddleCannotTellItsFeeds() throws {
        var (bytes, starts) = file()
        bytes[starts[1] + 5] ^= 0x40  // the length
        let scan = try LogFormat.scan(bytes, kind: .log)
        let damaged = scan.entries.compactMap { if case .damaged(let group) = $0 { group } else { nil } }
        #expect(damaged.count == 1 && damaged[0].feeds.isEmpty && damaged[0].offset == starts[1])
        #expect(recordsOf(scan) == [Self.records[0]] + Self.records.dropFirst(2))
    }

    @Test func headersThatAreNotOursAreRefusedWithTheReason() throws {
        let good = LogFormat.header(kind: .log, generation: 1)
        var future = good
        future[8] = 9  // format version 9
        future.replaceSubrange(28..<32, with: withUnsafeBytes(of: CRC32.checksum(future[0..<28]).littleEndian, Array.init))
        let cases: [([UInt8], LogFormat.FileKind, String)] = [
            (Array(good.prefix(10)), .log, "shorter than a header"),
            (Array("SQLite format 3\0".utf8) + good.dropFirst(16), .log, "not a file of this store"),
            (future, .log, "format version is 9"),
            (good, .checkpoint, "kind"),
        ]
        for (bytes, kind, reason) in cases {
            #expect { try LogFormat.scan(bytes, kind: kind) } throws: { ($0 as? LogFormat.HeaderProblem)?.reason.contains(reason) == true }
        }
    }
}

struct SnapshotDeltaTests {
    /// Against the oracle (the new bytes themselves) on seeded random edits.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func applyingTheDeltaGivesTheNewBytes(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let (old, new) = Self.edit(&rng, length: 0...300, symbols: 0...3, inserted: 0...20)
            let delta = SnapshotDelta(from: old, to: new)
            #expect(try delta.apply(to: old) == new)
            #expect(delta.prefix + delta.suffix <= min(old.count, new.count))
            #expect(delta.middle.count <= new.count - delta.prefix - delta.suffix)
        }
    }

    /// The delta is the longest common prefix, then the longest common suffix of the rest, as a byte by
    /// byte scan finds them (the oracle), whatever the lengths and wherever the edit falls against the
    /// eight-byte words it is compared in.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func theDeltaKeepsTheLongestPrefixThenSuffix(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let (old, new) = Self.edit(&rng, length: 0...100, symbols: 0...1, inserted: 0...12)
            let limit = min(old.count, new.count)
            var prefix = 0, suffix = 0
            while prefix < limit && old[prefix] == new[prefix] { prefix += 1 }
            while suffix < limit - prefix && old[old.count - 1 - suffix] == new[new.count - 1 - suffix] { suffix += 1 }
            #expect(SnapshotDelta(from: old, to: new) == SnapshotDelta(prefix: prefix, suffix: suffix, middle: Array(new[prefix..<(new.count - suffix)])))
        }
    }

    /// Counts read from a file (their CRC right, their values not) are refused, not added up.
    @Test(arguments: [(Int.max, Int.max), (1, Int.max), (Int.max, 0), (-1, 0), (0, Int.min)])
    func countsThatWouldOverflowAreAMismatch(prefix: Int, suffix: Int) {
        #expect(throws: SnapshotDelta.Mismatch.self) { try SnapshotDelta(prefix: prefix, suffix: suffix, middle: [1]).apply(to: [1, 2, 3]) }
    }

    @Test func aDeltaDoesNotFitAShorterSnapshot() {
        let delta = SnapshotDelta(from: Array("abcdef".utf8), to: Array("abXdef".utf8))
        #expect(delta == SnapshotDelta(prefix: 2, suffix: 3, middle: Array("X".utf8)))
        #expect(throws: SnapshotDelta.Mismatch.self) { try delta.apply(to: Array("abc".utf8)) }
    }

    /// Random bytes (`length` of them, each in `symbols`: few symbols, so prefixes and suffixes repeat)
    /// and the same with one random run replaced by up to `inserted` random bytes.
    static func edit(_ rng: inout SeededGenerator, length: ClosedRange<Int>, symbols: ClosedRange<UInt8>, inserted: ClosedRange<Int>) -> (old: [UInt8], new: [UInt8]) {
        let old = (0..<Int.random(in: length, using: &rng)).map { _ in UInt8.random(in: symbols, using: &rng) }
        var new = old
        let at = Int.random(in: 0...new.count, using: &rng)
        let removed = Int.random(in: 0...(new.count - at), using: &rng)
        new.replaceSubrange(at..<(at + removed), with: (0..<Int.random(in: inserted, using: &rng)).map { _ in UInt8.random(in: symbols, using: &rng) })
        return (old, new)
    }
}
