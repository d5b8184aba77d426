import DiffStream

/// An operation as read: its models are ranges of the reader's buffer until the batch is built.
typealias ParsedOperation = Operation<WireSnapshotReader.ParsedSection, WireSnapshotReader.ParsedItem>

/// The data of an event: `{"feed","history","from","version",…}` with the snapshot's `sections` or
/// the batch's `ops` (docs/protocol.md, "The event stream"), read in the same single pass as a snapshot
/// document.
extension WireSnapshotReader {
    /// A member of an operation whose meaning depends on `op` (which may come after it): kept as what
    /// it is, and checked once the operation's object is read. `item` is an id or an item object,
    /// `section` an id or a section object, `before` an id or `null`.
    enum Capture {
        case absent, null, other
        case string(String)
        /// An object's `id` and `kind` (nil when missing or not strings) and `model`.
        case object(id: String?, kind: String?, model: Range<Int>?)
    }

    /// Reads and validates the data of an event. The envelope's members are read when they have their
    /// type (`feed` a string, `version` a number with an integer value…) and left nil otherwise; the
    /// body named by `content` must be there and valid. Other members are read, checked and ignored.
    /// - Complexity: O(n) in the data's length, plus O(k log k) for objects in models whose k keys are
    ///   not in canonical order.
    static func readEvent(_ input: UnsafeBufferPointer<UInt8>, carrying content: WireEventData.Content) throws(WireError) -> WireEventData {
        var reader = WireSnapshotReader(input: input)
        var data = WireEventData(body: .success(.none))
        do {
            try reader.eventDocument(content, into: &data)
        } catch let error as JSONParseError {
            throw .malformed(error)
        } catch let error as WireError {
            throw error
        } catch {
            throw .shape(path: "$", expected: "an event's data")
        }
        switch content {
        case .snapshot: data.body = .success(.snapshot(try reader.buildSnapshot()))
        case .batch: data.body = .success(.batch(reader.buildBatch()))
        case .none: break
        }
        return data
    }

    /// The batch of the operations read.
    func buildBatch() -> WireBatch {
        let storage = scanner.out
        func section(_ section: ParsedSection) -> WireSection { WireSection(id: WireID(section.id), model: Self.model(section.model, in: storage)) }
        func item(_ item: ParsedItem) -> WireItem { WireItem(id: WireID(item.id), kind: item.kind, model: Self.model(item.model, in: storage)) }
        func anchor(_ id: String?) -> WireID? { id.map { WireID($0) } }
        var built: [WireOperation] = []
        built.reserveCapacity(operations.count)
        for operation in operations {
            switch operation {
            case .deleteSection(let id): built.append(.deleteSection(WireID(id)))
            case .insertSection(let parsed, let before): built.append(.insertSection(section(parsed), before: anchor(before)))
            case .moveSection(let id, let before): built.append(.moveSection(WireID(id), before: anchor(before)))
            case .updateSection(let parsed): built.append(.updateSection(section(parsed)))
            case .delete(let id): built.append(.delete(WireID(id)))
            case .insert(let parsed, let id, let before): built.append(.insert(item(parsed), section: WireID(id), before: anchor(before)))
            case .move(let id, let sectionID, let before): built.append(.move(WireID(id), section: WireID(sectionID), before: anchor(before)))
            case .update(let parsed): built.append(.update(item(parsed)))
            }
        }
        return WireBatch(built)
    }

    // MARK: The envelope

    private mutating func eventDocument(_ content: WireEventData.Content, into data: inout WireEventData) throws {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "{") else {
            try scanner.skipValue(depth: 0)
            scanner.skipWhitespace()
            guard scanner.atEnd else { throw scanner.error("unexpected data after the JSON value") }
            // Data that is not an object names nothing: an event without a body may still be used.
            guard content == .none else { throw WireError.shape(path: "$", expected: "an object") }
            return
        }
        var feed, history, error, detail: String?
        var from, version: Int?
        var seen: UInt32 = 0
        var others: Set<[UInt8]>?
        try members(depth: 1, seen: &seen, others: &others) { (reader, key) throws in
            switch key {
            case .feed: feed = try reader.optionalString(depth: 1)
            case .history: history = try reader.optionalString(depth: 1)
            case .error: error = try reader.optionalString(depth: 1)
            case .detail: detail = try reader.optionalString(depth: 1)
            case .from: from = try reader.optionalInteger(depth: 1)
            case .version: version = try reader.optionalInteger(depth: 1)
            case .sections where content == .snapshot: try reader.sectionList()
            case .ops where content == .batch: try reader.operationList()
            default: try reader.scanner.skipValue(depth: 1)
            }
        }
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw scanner.error("unexpected data after the JSON value") }
        switch content {
        case .snapshot where seen & Key.sections.rawValue == 0: throw WireError.shape(path: "sections", expected: "an array")
        case .batch where seen & Key.ops.rawValue == 0: throw WireError.shape(path: "ops", expected: "an array")
        default: break
        }
        data.feed = feed
        data.history = history
        data.from = from
        data.version = version
        data.error = error
        data.detail = detail
    }

    /// A string, or nil for a value of another type (read and checked).
    private mutating func optionalString(depth: Int) throws -> String? {
        guard scanner.current == UInt8(ascii: "\"") else {
            try scanner.skipValue(depth: depth)
            return nil
        }
        return try scanner.stringValue()
    }

    /// A kind, or nil for a value that is not a string (read and checked).
    private mutating func optionalKind(depth: Int) throws -> String? {
        guard scanner.current == UInt8(ascii: "\"") else {
            try scanner.skipValue(depth: depth)
            return nil
        }
        return try kindValue()
    }

    /// A number whose value is an integer `Int` holds (`7`, `7.0`, `7e0`), else nil: the number is taken
    /// at its nearest `Double`, as ``JSONValue/numberValue`` holds it. Other values are read and checked.
    private mutating func optionalInteger(depth: Int) throws -> Int? {
        let start = scanner.offset
        let first = scanner.current
        try scanner.skipValue(depth: depth)
        guard first == UInt8(ascii: "-") || scanner.isDigit(first) else { return nil }
        let text = String(decoding: UnsafeBufferPointer(rebasing: scanner.input[start..<scanner.offset]), as: UTF8.self)
        return Double(text).flatMap { Int(exactly: $0) }
    }

    // MARK: Operations

    private mutating func operationList() throws {
        guard scanner.current == UInt8(ascii: "[") else {
            try scanner.skipValue(depth: 1)
            throw WireError.shape(path: "ops", expected: "an array")
        }
        var index = 0
        try elements(depth: 2) { (reader) throws in
            let operation = try reader.operation(index)
            reader.operations.append(operation)
            index += 1
        }
    }

    /// One operation object (`ops[index]`). Its members are captured in any order, then checked against
    /// its `op` as ``WireCodec/decodeOperation(_:path:)`` checks them (the same members are required,
    /// the same ignored).
    private mutating func operation(_ index: Int) throws -> ParsedOperation {
        func path(_ member: String) -> String { member.isEmpty ? "ops[\(index)]" : "ops[\(index)].\(member)" }
        guard scanner.current == UInt8(ascii: "{") else {
            try scanner.skipValue(depth: 2)
            throw WireError.shape(path: path(""), expected: "an operation object with a known \"op\"")
        }
        var name: String?
        var item = Capture.absent, section = Capture.absent, before = Capture.absent
        var kind: String?
        var model: Range<Int>?
        var seen: UInt32 = 0
        var others: Set<[UInt8]>?
        try members(depth: 3, seen: &seen, others: &others) { (reader, key) throws in
            switch key {
            case .op: name = try reader.optionalString(depth: 3)
            case .item: item = try reader.capture(depth: 3)
            case .section: section = try reader.capture(depth: 3)
            case .before: before = try reader.capture(depth: 3)
            case .kind: kind = try reader.optionalKind(depth: 3)
            case .model: model = try reader.model(depth: 3)
            default: try reader.scanner.skipValue(depth: 3)
            }
        }
        guard let name, let operation = OperationKind(rawValue: name) else {
            throw WireError.shape(path: path(""), expected: "an operation object with a known \"op\"")
        }
        switch operation {
        case .deleteSection:
            return .deleteSection(try Self.id(section, path: path("section")))
        case .insertSection:
            guard case .object(let id, _, let sectionModel) = section else { throw WireError.shape(path: path("section"), expected: "an object") }
            let parsed = ParsedSection(id: try Self.id(id.map(Capture.string) ?? .absent, path: path("section.id")), model: sectionModel)
            return .insertSection(parsed, before: try Self.anchor(before, path: path("before")))
        case .moveSection:
            return .moveSection(try Self.id(section, path: path("section")), before: try Self.anchor(before, path: path("before")))
        case .updateSection:
            return .updateSection(ParsedSection(id: try Self.id(section, path: path("section")), model: model))
        case .delete:
            return .delete(try Self.id(item, path: path("item")))
        case .insert:
            guard case .object(let id, let itemKind, let itemModel) = item else { throw WireError.shape(path: path("item"), expected: "an object") }
            let parsed = ParsedItem(id: try Self.id(id.map(Capture.string) ?? .absent, path: path("item.id")),
                                    kind: try Self.kind(itemKind, path: path("item.kind")), model: itemModel)
            return .insert(parsed, section: try Self.id(section, path: path("section")), before: try Self.anchor(before, path: path("before")))
        case .move:
            return .move(try Self.id(item, path: path("item")), section: try Self.id(section, path: path("section")),
                         before: try Self.anchor(before, path: path("before")))
        case .update:
            // As the tree reader does: the item's id is `item`, its kind and model the operation's own.
            return .update(ParsedItem(id: try Self.id(item, path: path("id")), kind: try Self.kind(kind, path: path("kind")), model: model))
        }
    }

    /// Reads `item`, `section` or `before` as what it is: a string, `null`, an object (its `id`, `kind`
    /// and `model`; other members read, checked and ignored) or another value (read and checked).
    private mutating func capture(depth: Int) throws -> Capture {
        switch scanner.current {
        case UInt8(ascii: "\""):
            return .string(try scanner.stringValue())
        case UInt8(ascii: "{"):
            var id, kind: String?
            var model: Range<Int>?
            var seen: UInt32 = 0
            var others: Set<[UInt8]>?
            try members(depth: depth + 1, seen: &seen, others: &others) { (reader, key) throws in
                switch key {
                case .id: id = try reader.optionalString(depth: depth + 1)
                case .kind: kind = try reader.optionalKind(depth: depth + 1)
                case .model: model = try reader.model(depth: depth + 1)
                default: try reader.scanner.skipValue(depth: depth + 1)
                }
            }
            return .object(id: id, kind: kind, model: model)
        case UInt8(ascii: "n"):
            try scanner.skipValue(depth: depth)
            return .null
        default:
            try scanner.skipValue(depth: depth)
            return .other
        }
    }

    private static func id(_ capture: Capture, path: @autoclosure () -> String) throws(WireError) -> String {
        guard case .string(let id) = capture else { throw .shape(path: path(), expected: "a string") }
        guard WireID.isValid(id) else { throw .invalidID(path: path(), id: id) }
        return id
    }

    private static func anchor(_ capture: Capture, path: @autoclosure () -> String) throws(WireError) -> String? {
        switch capture {
        case .absent, .null: return nil
        default: return try id(capture, path: path())
        }
    }

    private static func kind(_ kind: String?, path: @autoclosure () -> String) throws(WireError) -> String {
        guard let kind, !kind.isEmpty, kind.utf8.count <= WireID.maximumLength else { throw .shape(path: path(), expected: "a non-empty string") }
        return kind
    }
}
