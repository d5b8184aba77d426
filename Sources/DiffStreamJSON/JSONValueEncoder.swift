/// Encodes an `Encodable` value as a ``JSONValue``, keeping object keys in the order the value
/// encodes them (for synthesized conformances, the order the properties are declared in). Write the
/// result with ``JSONWriter`` for JSON text with this package's number and string forms.
///
/// Unlike Foundation's `JSONEncoder`, whose key order is not specified unless keys are sorted, the
/// bytes are determined by the value: `struct Ack: Encodable { var feed: String; var version: Int }`
/// is always `{"feed":"news","version":2}`.
///
/// Numbers become `Double`s (``JSONValue/number(_:)``): integers beyond ±2^53 lose precision.
/// Non-finite numbers are written as `null` by ``JSONWriter``.
public struct JSONValueEncoder {
    public init() {}

    /// The value as JSON.
    /// - Throws: what the value's `encode(to:)` throws; an encoder error only if a value encodes
    ///   nothing at all.
    /// - Complexity: O(size of the value).
    public func encode(_ value: some Encodable) throws -> JSONValue {
        let node = EncodingNode()
        try value.encode(to: NodeEncoder(node: node, codingPath: []))
        return node.value
    }

    /// The value as compact JSON bytes, followed by `terminator` (for example a newline).
    public func encodeBytes(_ value: some Encodable, terminator: StaticString = "") throws -> [UInt8] {
        var writer = JSONWriter()
        writer.write(try encode(value))
        writer.raw(terminator)
        return writer.bytes
    }
}

/// A value being built; containers hold their children as nodes, so a nested container can still be
/// written after it was handed out.
private final class EncodingNode {
    enum Content {
        case empty
        case value(JSONValue)
        case object([(key: String, node: EncodingNode)])
        case array([EncodingNode])
    }

    var content = Content.empty

    var value: JSONValue {
        switch content {
        case .empty: .null
        case .value(let value): value
        case .object(let members): .object(JSONObject(members.map { (key: $0.key, value: $0.node.value) }))
        case .array(let elements): .array(elements.map(\.value))
        }
    }

    /// The child for `key`, replacing one encoded earlier under the same key.
    func child(forKey key: String) -> EncodingNode {
        var members: [(key: String, node: EncodingNode)] = []
        if case .object(let existing) = content { members = existing }
        let node = EncodingNode()
        if let index = members.firstIndex(where: { $0.key == key }) { members[index].node = node } else { members.append((key, node)) }
        content = .object(members)
        return node
    }

    func appendChild() -> EncodingNode {
        var elements: [EncodingNode] = []
        if case .array(let existing) = content { elements = existing }
        let node = EncodingNode()
        elements.append(node)
        content = .array(elements)
        return node
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = node.content {} else { node.content = .object([]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = node.content {} else { node.content = .array([]) }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(node: node, codingPath: codingPath)
    }
}

/// Encodes one value into `node`: JSON scalars directly, anything else through its `encode(to:)`.
private func encodeValue(_ value: some Encodable, into node: EncodingNode, codingPath: [any CodingKey]) throws {
    switch value {
    case let string as String: node.content = .value(.string(string))
    case let flag as Bool: node.content = .value(.bool(flag))
    case let number as Int: node.content = .value(.number(Double(number)))
    case let number as Double: node.content = .value(.number(number))
    case let json as JSONValue: node.content = .value(json)
    default: try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(forKey: key.stringValue).content = .value(.null) }
    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        try encodeValue(value, into: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws { node.child(forKey: key.stringValue).content = .value(.bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { node.child(forKey: key.stringValue).content = .value(.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { node.child(forKey: key.stringValue).content = .value(.number(value)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { node.child(forKey: key.stringValue).content = .value(.number(Double(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws { node.child(forKey: key.stringValue).content = .value(.number(Double(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try encode(Double(value), forKey: key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encode(Double(value), forKey: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encode(Double(value), forKey: key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.child(forKey: "super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]) }
}

/// The index of an array element, as a coding key.
private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int { if case .array(let elements) = node.content { elements.count } else { 0 } }

    private func next() -> (EncodingNode, [any CodingKey]) {
        let path = codingPath + [IndexKey(count)]
        return (node.appendChild(), path)
    }

    mutating func encodeNil() throws { next().0.content = .value(.null) }
    mutating func encode(_ value: some Encodable) throws {
        let (child, path) = next()
        try encodeValue(value, into: child, codingPath: path)
    }
    mutating func encode(_ value: Bool) throws { next().0.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { next().0.content = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { next().0.content = .value(.number(value)) }
    mutating func encode(_ value: Float) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int8) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int16) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int32) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int64) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt8) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt16) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt32) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt64) throws { try encode(Double(value)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let (child, path) = next()
        return NodeEncoder(node: child, codingPath: path).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let (child, path) = next()
        return NodeEncoder(node: child, codingPath: path).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        let (child, path) = next()
        return NodeEncoder(node: child, codingPath: path)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .value(.null) }
    mutating func encode(_ value: some Encodable) throws { try encodeValue(value, into: node, codingPath: codingPath) }
    mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { node.content = .value(.number(value)) }
    mutating func encode(_ value: Float) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int8) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int16) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int32) throws { try encode(Double(value)) }
    mutating func encode(_ value: Int64) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt8) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt16) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt32) throws { try encode(Double(value)) }
    mutating func encode(_ value: UInt64) throws { try encode(Double(value)) }
}
