/// One entry of a log or checkpoint file (see ``LogFormat``): what a write did to one feed, or, in a
/// checkpoint, one whole feed.
enum StoreRecord: Equatable {
    /// A new version of a feed (``FeedWrite/put(name:history:version:snapshot:batch:keepFrom:viewState:)``),
    /// its snapshot whole or as a ``SnapshotDelta`` from the version before.
    case put(Put)
    case viewState(name: String, bytes: [UInt8])
    case delete(name: String)
    /// Checkpoint files only: a feed as it stood.
    case feed(StoredFeed)
    /// Checkpoint files only: the last record, with the number of feeds before it.
    case end(feeds: Int)

    struct Put: Equatable {
        var name: String
        var history: String
        var version: Int
        var snapshot: Snapshot
        var batch: StoredBatch?
        var keepFrom: Int
        var viewState: [UInt8]?
    }

    enum Snapshot: Equatable {
        case full([UInt8])
        case delta(SnapshotDelta)
    }

    /// Bytes that do not decode as a record, though their CRC was right (a build that writes what this
    /// one cannot read, or a bug).
    struct Malformed: Error {
        var reason: String
    }

    private enum Kind: UInt8 {
        case put = 1, viewState = 2, delete = 3, feed = 4, end = 5
    }

    /// The feed the record is about (nil for ``end(feeds:)``).
    var feed: String? {
        switch self {
        case .put(let put): put.name
        case .viewState(let name, _), .delete(let name): name
        case .feed(let feed): feed.name
        case .end: nil
        }
    }

    func encode(into writer: inout ByteWriter) {
        func name(_ text: String) {
            let utf8 = Array(text.utf8)
            writer.u16(UInt16(truncatingIfNeeded: utf8.count))
            writer.bytes.append(contentsOf: utf8)
        }
        switch self {
        case .put(let put):
            writer.u8(Kind.put.rawValue)
            name(put.name)
            writer.data(Array(put.history.utf8))
            writer.int(put.version)
            writer.int(put.keepFrom)
            var flags: UInt8 = 0
            if case .delta = put.snapshot { flags |= 1 }
            if put.batch != nil { flags |= 2 }
            if put.viewState != nil { flags |= 4 }
            writer.u8(flags)
            switch put.snapshot {
            case .full(let bytes): writer.data(bytes)
            case .delta(let delta):
                writer.int(delta.prefix)
                writer.int(delta.suffix)
                writer.data(delta.middle)
            }
            if let batch = put.batch { writer.data(batch.bytes) }
            if let state = put.viewState { writer.data(state) }
        case .viewState(let feed, let bytes):
            writer.u8(Kind.viewState.rawValue)
            name(feed)
            writer.data(bytes)
        case .delete(let feed):
            writer.u8(Kind.delete.rawValue)
            name(feed)
        case .feed(let feed):
            writer.u8(Kind.feed.rawValue)
            name(feed.name)
            writer.data(Array(feed.history.utf8))
            writer.int(feed.version)
            writer.data(feed.snapshot)
            writer.u8(feed.viewState == nil ? 0 : 1)
            if let state = feed.viewState { writer.data(state) }
            writer.u32(UInt32(feed.batches.count))
            for batch in feed.batches {
                writer.int(batch.version)
                writer.data(batch.bytes)
            }
        case .end(let count):
            writer.u8(Kind.end.rawValue)
            writer.int(count)
        }
    }

    /// Decodes one record that fills `reader` exactly.
    static func decode(_ reader: inout ByteReader) throws(Malformed) -> StoreRecord {
        do {
            let code = try reader.u8()
            guard let kind = Kind(rawValue: code) else { throw Malformed(reason: "unknown record kind \(code)") }
            if kind == .end {
                let count = try reader.int()
                guard count >= 0 else { throw Malformed(reason: "an end record counts \(count) feeds") }
                let record = StoreRecord.end(feeds: count)
                try finished(reader)
                return record
            }
            let name = try text(reader.take(Int(try reader.u16())), what: "feed name")
            let record: StoreRecord
            switch kind {
            case .put:
                let history = try text(reader.data(), what: "history")
                let version = try positive(reader.int(), what: "version")
                let keepFrom = try reader.int()
                let flags = try reader.u8()
                let snapshot: Snapshot
                if flags & 1 != 0 {
                    let prefix = try reader.int(), suffix = try reader.int()
                    guard prefix >= 0, suffix >= 0 else { throw Malformed(reason: "a snapshot change keeps \(prefix) and \(suffix) bytes") }
                    snapshot = .delta(SnapshotDelta(prefix: prefix, suffix: suffix, middle: try reader.data()))
                } else {
                    snapshot = .full(try reader.data())
                }
                let batch = flags & 2 != 0 ? StoredBatch(version: version, bytes: try reader.data()) : nil
                let state = flags & 4 != 0 ? try reader.data() : nil
                record = .put(Put(name: name, history: history, version: version, snapshot: snapshot, batch: batch, keepFrom: keepFrom, viewState: state))
            case .viewState:
                record = .viewState(name: name, bytes: try reader.data())
            case .delete:
                record = .delete(name: name)
            case .feed:
                let history = try text(reader.data(), what: "history")
                let version = try positive(reader.int(), what: "version")
                let snapshot = try reader.data()
                let state = try reader.u8() != 0 ? try reader.data() : nil
                let count = Int(try reader.u32())
                guard count <= reader.remaining / 12 else { throw Malformed(reason: "a window of \(count) batches does not fit the record") }
                var batches: [StoredBatch] = []
                batches.reserveCapacity(count)
                for _ in 0..<count { batches.append(StoredBatch(version: try positive(reader.int(), what: "batch version"), bytes: try reader.data())) }
                record = .feed(StoredFeed(name: name, history: history, version: version, snapshot: snapshot, batches: batches, viewState: state))
            case .end:
                throw Malformed(reason: "an end record with a name")  // returned above, before the name
            }
            try finished(reader)
            return record
        } catch let error as Malformed {
            throw error
        } catch {
            throw Malformed(reason: "the record ends too early")
        }
    }

    private static func finished(_ reader: ByteReader) throws(Malformed) {
        guard reader.remaining == 0 else { throw Malformed(reason: "\(reader.remaining) bytes left over after the record") }
    }

    /// Versions start at 1: anything else was never written by a store (and `version - 1` must not
    /// overflow when the record is replayed).
    private static func positive(_ value: Int, what: String) throws(Malformed) -> Int {
        guard value >= 1 else { throw Malformed(reason: "the \(what) is \(value)") }
        return value
    }

    private static func text(_ bytes: [UInt8], what: String) throws(Malformed) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Malformed(reason: "the \(what) is not UTF-8") }
        return text
    }
}
