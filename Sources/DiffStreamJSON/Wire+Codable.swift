import DiffStream

// Codable conformances, so Swift clients can use JSONEncoder/JSONDecoder with the wire types. The
// server's own hot path uses WireCodec, which writes bytes directly and validates as it reads.

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
        } else if let object = try? decoder.container(keyedBy: AnyKey.self) {
            self = .object(JSONObject(try object.allKeys.map { (key: $0.stringValue, value: try object.decode(JSONValue.self, forKey: $0)) }))
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let flag = try? single.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? single.decode(Double.self) {
                self = .number(number)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let flag):
            var single = encoder.singleValueContainer()
            try single.encode(flag)
        case .number(let number):
            var single = encoder.singleValueContainer()
            try single.encode(number)
        case .string(let string):
            var single = encoder.singleValueContainer()
            try single.encode(string)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let object):
            var container = encoder.container(keyedBy: AnyKey.self)
            for member in object { try container.encode(member.value, forKey: AnyKey(member.key)) }
        }
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}




/// A whole wire document, `{"sections":[…]}`, for Codable users.
public struct WireSnapshotDocument: Codable, Equatable, Sendable {
    public struct SectionEntry: Codable, Equatable, Sendable {
        public var id: WireID
        public var model: JSONModel
        public var items: [WireItem]
    }

    public var sections: [SectionEntry]

    public init(_ snapshot: WireSnapshot) {
        sections = snapshot.sections.enumerated().map { index, section in
            SectionEntry(id: section.id, model: section.model, items: snapshot.items(atSectionIndex: index))
        }
    }

    /// The snapshot, validated (ids, duplicates).
    public func snapshot() throws(WireError) -> WireSnapshot {
        var built: [Section<WireSection, WireItem>] = []
        for (index, entry) in sections.enumerated() {
            guard WireID.isValid(entry.id.string) else { throw .invalidID(path: "sections[\(index)].id", id: entry.id.string) }
            for (itemIndex, item) in entry.items.enumerated() where !WireID.isValid(item.id.string) {
                throw .invalidID(path: "sections[\(index)].items[\(itemIndex)].id", id: item.id.string)
            }
            built.append(Section(WireSection(id: entry.id, model: entry.model), items: entry.items))
        }
        do { return try WireSnapshot(sections: built) } catch { throw .snapshot(error) }
    }
}

extension Operation: Codable where SectionType == WireSection, ItemType == WireItem {
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        self = try WireCodec.decodeOperation(value)
    }

    public func encode(to encoder: any Encoder) throws {
        var writer = JSONWriter()
        WireCodec.writeOperation(self, into: &writer)
        try JSONParser.parse(writer.bytes).encode(to: encoder)
    }
}
