import DiffStream
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads wire documents straight from bytes, in one pass and without a JSON tree: a snapshot document
/// `{"sections":[…]}` into a ``WireSnapshot``, and the data of an event of the event stream (a snapshot
/// or a batch with its `feed`, `history`, `from`, `version`; `WireSnapshotReader+Event.swift`). Ids and
/// kinds become strings, and each model is written in canonical form into one buffer that all of the
/// document's ``JSONModel``s share.
///
/// The whole document is checked as strictly as ``JSONParser`` checks it (syntax errors carry their byte
/// offset). Shape errors are thrown as soon as they are seen; ``WireCodec/decodeSnapshot(_:)-(some Collection<UInt8>)``
/// and ``WireCodec/decodeEventData(_:carrying:)`` then read the document again to report the first
/// problem in document order, malformed JSON first.
struct WireSnapshotReader {
    var scanner: CanonicalJSONScanner
    private var sections: [ParsedSection] = []
    private var items: [ParsedItem] = []
    /// A batch's operations, with their models as ranges of the scanner's buffer.
    var operations: [ParsedOperation] = []
    private var lastKind: (Range<Int>, String)?
    /// The previous document of the same feed (``WireSnapshotMemo``), its parts held apart so that
    /// each item's comparison reads them in place, and the index of its item that the next item is
    /// compared with first.
    private var memoSnapshot: WireSnapshot?
    private var memoDocument: [UInt8] = []
    private var memoSpans: [Range<Int>] = []
    private var memoItems: [WireItem] = []
    private var memoCursor = 0
    /// Where each item was read from in the input, in document order (for the next memo), when
    /// `recordsSpans`.
    private var spans: [Range<Int>] = []
    private var recordsSpans = false

    /// An item as read: its model is a range of the scanner's buffer (nil: `null`), with its
    /// fingerprint when it was taken from a memo.
    struct ParsedItem: Identifiable {
        var id: String
        var kind: String
        var model: Range<Int>?
        var fingerprint: UInt64? = nil
    }

    /// A section as read; `items` is its range of ``items`` (snapshots only).
    struct ParsedSection: Identifiable {
        var id: String
        var model: Range<Int>?
        var items: Range<Int> = 0..<0
    }

    /// The keys the reader knows, one bit each; anything else is read, checked and ignored. A key is
    /// known wherever it appears (its repetition is found by its bit), and only means something where
    /// the document's shape gives it a meaning.
    enum Key: UInt32 {
        case other = 0
        case id = 0x1, kind = 0x2, model = 0x4, items = 0x8, sections = 0x10
        case feed = 0x20, history = 0x40, from = 0x80, version = 0x100, ops = 0x200
        case op = 0x400, item = 0x800, section = 0x1000, before = 0x2000, error = 0x4000, detail = 0x8000
    }

    init(input: UnsafeBufferPointer<UInt8>) {
        scanner = CanonicalJSONScanner(input: input)
        scanner.out.reserveCapacity(input.count)
        items.reserveCapacity(input.count / 48)
    }

    /// Reads and validates a snapshot document.
    /// - Complexity: O(n) in the document's length, plus O(k log k) for objects in models whose k keys
    ///   are not in canonical order.
    /// - Parameter memo: the previous document of the same feed; the items whose bytes are the same
    ///   are taken from it, not read again (``WireSnapshotMemo``).
    /// - Returns: the snapshot, and with a memo the memo of this document (nil when it is too long to keep).
    /// - Parameter remembering: whether to return this document's memo (when it is short enough to keep).
    static func read(_ input: UnsafeBufferPointer<UInt8>, memo: WireSnapshotMemo.Entry? = nil, remembering: Bool = false) throws(WireError) -> (WireSnapshot, WireSnapshotMemo.Entry?) {
        var reader = WireSnapshotReader(input: input)
        if let memo {
            reader.memoSnapshot = memo.snapshot
            reader.memoDocument = memo.document
            reader.memoSpans = memo.spans
            reader.memoItems = memo.items
        }
        reader.recordsSpans = remembering && input.count <= WireSnapshotMemo.maximumDocumentBytes
        if reader.recordsSpans { reader.spans.reserveCapacity(memo?.spans.count ?? 16) }
        do {
            try reader.document()
        } catch let error as JSONParseError {
            throw .malformed(error)
        } catch let error as WireError {
            throw error
        } catch {
            throw .shape(path: "$", expected: "a snapshot document")
        }
        let snapshot = try reader.buildSnapshot()
        guard reader.recordsSpans else { return (snapshot, nil) }
        return (snapshot, reader.memo(of: snapshot, input: input))
    }

    /// This document's memo: its bytes and its items with where each was read from.
    private func memo(of snapshot: WireSnapshot, input: UnsafeBufferPointer<UInt8>) -> WireSnapshotMemo.Entry {
        let items = snapshot.numberOfSections == 1 ? snapshot.items(atSectionIndex: 0) : snapshot.items
        return WireSnapshotMemo.Entry(document: Array(input), spans: spans, items: items, snapshot: snapshot)
    }

    /// The memo's item whose bytes the input has at the scanner's offset (an item's `{`), tried at the
    /// cursor (the item changed in place, or is the same), the one after it (one removed) and the one
    /// before it (one inserted); its canonical model is copied into the scanner's buffer. The cursor
    /// moves past the item found, or by one when none is (read as changed in place).
    /// - Complexity: O(length of the item): at most three byte comparisons.
    private mutating func reused() -> ParsedItem? {
        let start = scanner.offset
        let input = scanner.input
        let cursor = memoCursor
        memoCursor += 1
        // Read in place: copying an item out retains and releases its three buffers.
        return memoSpans.withUnsafeBufferPointer { spans in
            memoDocument.withUnsafeBufferPointer { old in
                memoItems.withUnsafeBufferPointer { items in
                    for step in 0..<3 {
                        let candidate = step == 2 ? cursor - 1 : cursor + step
                        guard candidate >= 0, candidate < spans.count else { continue }
                        let span = spans[candidate]
                        guard start + span.count <= input.count,
                              memcmp(input.baseAddress! + start, old.baseAddress! + span.lowerBound, span.count) == 0
                        else { continue }
                        memoCursor = candidate + 1
                        scanner.offset = start + span.count
                        let modelStart = scanner.out.count
                        scanner.out.append(contentsOf: items[candidate].model.bytes)
                        return ParsedItem(id: items[candidate].id.string, kind: items[candidate].kind, model: modelStart..<scanner.out.count,
                                          fingerprint: items[candidate].model.fingerprint)
                    }
                    return nil
                }
            }
        }
    }

    /// The model at `range` of `storage` (the scanner's buffer once the document is read); nil is `null`.
    static func model(_ range: Range<Int>?, in storage: [UInt8]) -> JSONModel {
        guard let range else { return JSONModel() }
        let fingerprint = storage.withUnsafeBytes { JSONModel.fingerprint(of: UnsafeRawBufferPointer(rebasing: $0[range])) }
        return JSONModel(canonical: storage[range], fingerprint: fingerprint)
    }

    /// The snapshot of the sections and items read.
    func buildSnapshot() throws(WireError) -> WireSnapshot {
        let storage = scanner.out
        func model(_ range: Range<Int>?) -> JSONModel { Self.model(range, in: storage) }
        var built: [Section<WireSection, WireItem>] = []
        built.reserveCapacity(sections.count)
        for section in sections {
            var sectionItems: [WireItem] = []
            sectionItems.reserveCapacity(section.items.count)
            for index in section.items {
                let item = items[index]
                let itemModel = if let fingerprint = item.fingerprint, let range = item.model {
                    JSONModel(canonical: storage[range], fingerprint: fingerprint)
                } else {
                    model(item.model)
                }
                sectionItems.append(WireItem(id: WireID(item.id), kind: item.kind, model: itemModel))
            }
            built.append(Section(WireSection(id: WireID(section.id), model: model(section.model)), items: sectionItems))
        }
        // A change of contents only: the memo's snapshot has these ids in this order (checked, not assumed).
        if let same = memoSnapshot?.withSameIDs(built) { return same }
        do { return try WireSnapshot(sections: built) } catch { throw .snapshot(error) }
    }

    // MARK: Structure

    private mutating func document() throws {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "{") else {
            try scanner.skipValue(depth: 0)
            throw WireError.shape(path: "$", expected: "an object with \"sections\"")
        }
        var seen: UInt32 = 0
        var others: Set<[UInt8]>?
        try members(depth: 1, seen: &seen, others: &others) { (reader, key) throws in
            if key == .sections {
                try reader.sectionList()
            } else {
                try reader.scanner.skipValue(depth: 1)
            }
        }
        guard seen & Key.sections.rawValue != 0 else { throw WireError.shape(path: "sections", expected: "an array") }
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw scanner.error("unexpected data after the JSON value") }
    }

    mutating func sectionList() throws {
        guard scanner.current == UInt8(ascii: "[") else {
            try scanner.skipValue(depth: 1)
            throw WireError.shape(path: "sections", expected: "an array")
        }
        var index = 0
        try elements(depth: 2) { (reader) throws in
            try reader.section(index)
            index += 1
        }
    }

    private mutating func section(_ index: Int) throws {
        guard scanner.current == UInt8(ascii: "{") else {
            try scanner.skipValue(depth: 2)
            throw WireError.shape(path: "sections[\(index)]", expected: "an object")
        }
        var id: String?
        var model: Range<Int>?
        let firstItem = items.count
        var seen: UInt32 = 0
        var others: Set<[UInt8]>?
        try members(depth: 3, seen: &seen, others: &others) { (reader, key) throws in
            switch key {
            case .id:
                id = try reader.id(path: "sections[\(index)].id", depth: 3)
            case .model:
                model = try reader.model(depth: 3)
            case .items:
                try reader.itemList(section: index)
            default:
                try reader.scanner.skipValue(depth: 3)
            }
        }
        guard let id else { throw WireError.shape(path: "sections[\(index)].id", expected: "a string") }
        sections.append(ParsedSection(id: id, model: model, items: firstItem..<items.count))
    }

    private mutating func itemList(section: Int) throws {
        if scanner.current == UInt8(ascii: "n") {
            try scanner.skipValue(depth: 3)
            return
        }
        guard scanner.current == UInt8(ascii: "[") else {
            try scanner.skipValue(depth: 3)
            throw WireError.shape(path: "sections[\(section)].items", expected: "an array")
        }
        var index = 0
        try elements(depth: 4) { (reader) throws in
            try reader.item(section: section, index: index)
            index += 1
        }
    }

    private mutating func item(section: Int, index: Int) throws {
        guard scanner.current == UInt8(ascii: "{") else {
            try scanner.skipValue(depth: 4)
            throw WireError.shape(path: "sections[\(section)].items[\(index)]", expected: "an object")
        }
        let start = scanner.offset
        if !memoSpans.isEmpty, let item = reused() {
            items.append(item)
            if recordsSpans { spans.append(start..<scanner.offset) }
            return
        }
        var id: String?
        var kind: String?
        var model: Range<Int>?
        var seen: UInt32 = 0
        var others: Set<[UInt8]>?
        try members(depth: 5, seen: &seen, others: &others) { (reader, key) throws in
            switch key {
            case .id:
                id = try reader.id(path: "sections[\(section)].items[\(index)].id", depth: 5)
            case .kind:
                guard reader.scanner.current == UInt8(ascii: "\"") else {
                    try reader.scanner.skipValue(depth: 5)
                    throw WireError.shape(path: "sections[\(section)].items[\(index)].kind", expected: "a non-empty string")
                }
                kind = try reader.kindValue()
            case .model:
                model = try reader.model(depth: 5)
            default:
                try reader.scanner.skipValue(depth: 5)
            }
        }
        guard let id else { throw WireError.shape(path: "sections[\(section)].items[\(index)].id", expected: "a string") }
        guard let kind, !kind.isEmpty, kind.utf8.count <= WireID.maximumLength else {
            throw WireError.shape(path: "sections[\(section)].items[\(index)].kind", expected: "a non-empty string")
        }
        items.append(ParsedItem(id: id, kind: kind, model: model))
        if recordsSpans { spans.append(start..<scanner.offset) }
    }

    /// A model (any value): its canonical form, written into the scanner's buffer, and its range there.
    mutating func model(depth: Int) throws -> Range<Int> {
        let start = scanner.out.count
        try scanner.value(depth: depth)
        return start..<scanner.out.count
    }

    /// A kind (at its quote): most items of a snapshot share a few kinds, so a kind spelled with the same
    /// bytes as the previous one reuses its string.
    mutating func kindValue() throws -> String {
        let input = scanner.input
        let start = scanner.offset + 1
        if let (range, kind) = lastKind {
            let end = start + range.count
            if end < input.count, input[end] == UInt8(ascii: "\""),
               memcmp(input.baseAddress! + start, input.baseAddress! + range.lowerBound, range.count) == 0 {
                scanner.offset = end + 1
                return kind
            }
        }
        let kind = try scanner.stringValue()
        let range = start..<(scanner.offset - 1)
        if range.count == kind.utf8.count { lastKind = (range, kind) }  // no escapes: the bytes are the kind
        return kind
    }

    private mutating func id(path: @autoclosure () -> String, depth: Int) throws -> String {
        guard scanner.current == UInt8(ascii: "\"") else {
            try scanner.skipValue(depth: depth)
            throw WireError.shape(path: path(), expected: "a string")
        }
        let id = try scanner.stringValue()
        guard WireID.isValid(id) else { throw WireError.invalidID(path: path(), id: id) }
        return id
    }

    // MARK: Objects and arrays

    /// Reads an object's members (at `{`), calling `body` with the scanner at each value.
    /// Known keys are tracked in `seen`, others in `others`; a repeated key is a syntax error.
    mutating func members(depth: Int, seen: inout UInt32, others: inout Set<[UInt8]>?, _ body: (inout WireSnapshotReader, Key) throws -> Void) throws {
        guard depth <= JSONParser.maximumDepth else { throw scanner.error("nesting deeper than \(JSONParser.maximumDepth)") }
        scanner.offset += 1
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "}") {
            scanner.offset += 1
            return
        }
        while true {
            scanner.skipWhitespace()
            guard scanner.current == UInt8(ascii: "\"") else { throw scanner.error("expected a string key") }
            let keyOffset = scanner.offset
            let key = try self.key(others: &others, keyOffset: keyOffset)
            if key != .other {
                guard seen & key.rawValue == 0 else { throw scanner.error("duplicate key \"\(key)\"", at: keyOffset) }
                seen |= key.rawValue
            }
            scanner.skipWhitespace()
            guard scanner.current == UInt8(ascii: ":") else { throw scanner.error("expected ':'") }
            scanner.offset += 1
            scanner.skipWhitespace()
            guard !scanner.atEnd else { throw scanner.error("unexpected end of input") }
            try body(&self, key)
            scanner.skipWhitespace()
            guard !scanner.atEnd else { throw scanner.error("expected ',' or '}'") }
            switch scanner.current {
            case UInt8(ascii: ","): scanner.offset += 1
            case UInt8(ascii: "}"):
                scanner.offset += 1
                return
            default: throw scanner.error("expected ',' or '}'")
            }
        }
    }

    /// Reads an array's elements (at `[`), calling `body` with the scanner at each element.
    mutating func elements(depth: Int, _ body: (inout WireSnapshotReader) throws -> Void) throws {
        guard depth <= JSONParser.maximumDepth else { throw scanner.error("nesting deeper than \(JSONParser.maximumDepth)") }
        scanner.offset += 1
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "]") {
            scanner.offset += 1
            return
        }
        while true {
            scanner.skipWhitespace()
            guard !scanner.atEnd else { throw scanner.error("unexpected end of input") }
            try body(&self)
            scanner.skipWhitespace()
            guard !scanner.atEnd else { throw scanner.error("expected ',' or ']'") }
            switch scanner.current {
            case UInt8(ascii: ","): scanner.offset += 1
            case UInt8(ascii: "]"):
                scanner.offset += 1
                return
            default: throw scanner.error("expected ',' or ']'")
            }
        }
    }

    /// Reads a key (at its quote). Plain keys are matched on the input's bytes; a key with escapes is
    /// matched on its canonical form, so `"\u0069d"` is `id`. Unknown keys are remembered exactly.
    private mutating func key(others: inout Set<[UInt8]>?, keyOffset: Int) throws -> Key {
        let input = scanner.input
        var end = keyOffset + 1
        while end < input.count, input[end] != UInt8(ascii: "\""), input[end] != UInt8(ascii: "\\"), input[end] >= 0x20, input[end] < 0x80 {
            end += 1
        }
        let canonical: [UInt8]
        if end < input.count, input[end] == UInt8(ascii: "\"") {
            let plain = UnsafeBufferPointer(rebasing: input[(keyOffset + 1)..<end])
            if let known = Self.known(plain) {
                scanner.offset = end + 1
                return known
            }
            canonical = Array(plain)
            scanner.offset = end + 1
        } else {
            // Escapes or non-ASCII: the canonical form, without quotes.
            let mark = scanner.out.count
            try scanner.string()
            canonical = Array(scanner.out[(mark + 1)..<(scanner.out.count - 1)])
            scanner.out.removeSubrange(mark...)
            if let known = canonical.withUnsafeBufferPointer({ Self.known($0) }) { return known }
        }
        var set = others ?? []
        guard set.insert(canonical).inserted else {
            throw scanner.error("duplicate key \"\(String(decoding: canonical.prefix(64), as: UTF8.self))\"", at: keyOffset)
        }
        others = set
        return .other
    }

    private static func known(_ bytes: UnsafeBufferPointer<UInt8>) -> Key? {
        @inline(__always) func matches(_ name: StaticString) -> Bool {
            let expected = name.utf8Start
            for index in 0..<bytes.count where bytes[index] != expected[index] { return false }
            return true
        }
        switch bytes.count {
        case 2: return matches("id") ? .id : matches("op") ? .op : nil
        case 3: return matches("ops") ? .ops : nil
        case 4: return matches("kind") ? .kind : matches("feed") ? .feed : matches("item") ? .item : matches("from") ? .from : nil
        case 5: return matches("model") ? .model : matches("items") ? .items : matches("error") ? .error : nil
        case 6: return matches("before") ? .before : matches("detail") ? .detail : nil
        case 7: return matches("section") ? .section : matches("version") ? .version : matches("history") ? .history : nil
        case 8: return matches("sections") ? .sections : nil
        default: return nil
        }
    }
}
