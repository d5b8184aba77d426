/// One answer of a feed's cacheable log (`GET /feeds/{feed}/log`, docs/protocol.md, "Reads through HTTP
/// caches"): `{"feed","history","snapshot"?,"batches":[…],"next","upToDate","cursor"}`, where the snapshot
/// and each batch are exactly the data of the event stream's `snapshot` and `batch` events.
public struct WireLogPage: Equatable, Sendable {
    /// `feed`, if it is a string.
    public var feed: String?
    /// `history`, if it is a string.
    public var history: String?
    /// The snapshot (the answer to a read with no position), read as an event's data.
    public var snapshot: WireEventData?
    /// The batches after the position, in order, each read as an event's data.
    public var batches: [WireEventData]
    /// The event id to read after next, if it is a string.
    public var next: String?
    /// Whether the answer reached the feed's head when it was made.
    public var upToDate: Bool
    /// The cursor to pass on the next live read (a string, or a number's text).
    public var cursor: String?

    public init(feed: String? = nil, history: String? = nil, snapshot: WireEventData? = nil, batches: [WireEventData] = [],
                next: String? = nil, upToDate: Bool = false, cursor: String? = nil) {
        self.feed = feed
        self.history = history
        self.snapshot = snapshot
        self.batches = batches
        self.next = next
        self.upToDate = upToDate
        self.cursor = cursor
    }
}

extension WireCodec {
    /// Reads a log answer in one pass: the envelope's members, and the snapshot and each batch with the
    /// event reader (``decodeEventData(_:carrying:)``'s), straight from their bytes, models kept as the
    /// server wrote them. Members of another type than theirs read as nil (`upToDate` as false); other
    /// members are read, checked and ignored.
    /// - Throws: ``WireError/malformed(_:)`` for malformed JSON, ``WireError/shape(path:expected:)`` for an
    ///   answer that is not an object, a `batches` that is not an array, or a snapshot or batch that does
    ///   not read (its path names it: `batches[3].ops[0]`).
    /// - Complexity: O(n) in the answer's length (plus sorting the keys of model objects that are not in
    ///   canonical order).
    public static func decodeLogPage(_ bytes: some Collection<UInt8>) throws(WireError) -> WireLogPage {
        let contiguous = Array(bytes)
        return try contiguous.withUnsafeBufferPointer { (input) throws(WireError) in
            var reader = LogPageReader(input: input)
            return try reader.read()
        }
    }
}

/// The reader of ``WireLogPage``: a walk over the top-level object with the canonical scanner, which
/// leaves the snapshot's and the batches' byte ranges to the event reader.
private struct LogPageReader {
    var scanner: CanonicalJSONScanner

    init(input: UnsafeBufferPointer<UInt8>) { scanner = CanonicalJSONScanner(input: input) }

    mutating func read() throws(WireError) -> WireLogPage {
        var page = WireLogPage()
        var snapshot: Range<Int>?
        var batches: [Range<Int>] = []
        do {
            scanner.skipWhitespace()
            guard scanner.current == UInt8(ascii: "{") else {
                try scanner.skipValue(depth: 0)
                throw WireError.shape(path: "$", expected: "an object")
            }
            scanner.offset += 1
            scanner.skipWhitespace()
            var first = true
            while scanner.current != UInt8(ascii: "}") {
                if !first {
                    guard scanner.current == UInt8(ascii: ",") else { throw scanner.error("expected ',' or '}'") }
                    scanner.offset += 1
                    scanner.skipWhitespace()
                }
                first = false
                guard scanner.current == UInt8(ascii: "\"") else { throw scanner.error("expected a key") }
                let key = try scanner.stringValue()
                scanner.skipWhitespace()
                guard scanner.current == UInt8(ascii: ":") else { throw scanner.error("expected ':'") }
                scanner.offset += 1
                scanner.skipWhitespace()
                switch key {
                case "feed": page.feed = try string()
                case "history": page.history = try string()
                case "next": page.next = try string()
                case "cursor": page.cursor = try cursor()
                case "upToDate":
                    let start = scanner.offset
                    try scanner.skipValue(depth: 1)
                    page.upToDate = scanner.offset - start == 4 && scanner.input[start] == UInt8(ascii: "t")
                case "snapshot":
                    let start = scanner.offset
                    try scanner.skipValue(depth: 1)
                    if scanner.input[start] == UInt8(ascii: "{") { snapshot = start..<scanner.offset }
                case "batches":
                    guard scanner.current == UInt8(ascii: "[") else { throw WireError.shape(path: "batches", expected: "an array") }
                    batches = try elements()
                default:
                    try scanner.skipValue(depth: 1)
                }
                scanner.skipWhitespace()
            }
            scanner.offset += 1
            scanner.skipWhitespace()
            guard scanner.atEnd else { throw scanner.error("unexpected data after the JSON value") }
        } catch let error as WireError {
            throw error
        } catch let error as JSONParseError {
            throw .malformed(error)
        } catch {
            throw .shape(path: "$", expected: "a log answer")
        }
        page.snapshot = try event(snapshot, carrying: .snapshot, path: "snapshot")
        for (index, range) in batches.enumerated() {
            if let batch = try event(range, carrying: .batch, path: "batches[\(index)]") { page.batches.append(batch) }
        }
        return page
    }

    private mutating func string() throws(JSONParseError) -> String? {
        guard scanner.current == UInt8(ascii: "\"") else {
            try scanner.skipValue(depth: 1)
            return nil
        }
        return try scanner.stringValue()
    }

    /// A string, or a number's text (the cursor is opaque: it is passed back as it came).
    private mutating func cursor() throws(JSONParseError) -> String? {
        if scanner.current == UInt8(ascii: "\"") { return try scanner.stringValue() }
        let start = scanner.offset
        try scanner.skipValue(depth: 1)
        let text = UnsafeBufferPointer(rebasing: scanner.input[start..<scanner.offset])
        return text.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) ? String(decoding: text, as: UTF8.self) : nil
    }

    /// The byte ranges of an array's elements.
    private mutating func elements() throws(JSONParseError) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        scanner.offset += 1
        scanner.skipWhitespace()
        if scanner.current == UInt8(ascii: "]") {
            scanner.offset += 1
            return ranges
        }
        while true {
            scanner.skipWhitespace()
            let start = scanner.offset
            try scanner.skipValue(depth: 2)
            ranges.append(start..<scanner.offset)
            scanner.skipWhitespace()
            switch scanner.current {
            case UInt8(ascii: ","): scanner.offset += 1
            case UInt8(ascii: "]"):
                scanner.offset += 1
                return ranges
            default: throw scanner.error("expected ',' or ']'")
            }
        }
    }

    /// An event's data read from its range, a shape problem named by its place in the answer.
    private func event(_ range: Range<Int>?, carrying content: WireEventData.Content, path: String) throws(WireError) -> WireEventData? {
        guard let range else { return nil }
        let data = try WireCodec.decodeEventData(UnsafeBufferPointer(rebasing: scanner.input[range]), carrying: content)
        if case .failure(let error) = data.body {
            switch error {
            case .shape(let inner, let expected): throw .shape(path: inner == "$" ? path : "\(path).\(inner)", expected: expected)
            case .invalidID(let inner, let id): throw .invalidID(path: "\(path).\(inner)", id: id)
            default: throw error
            }
        }
        return data
    }
}
