/// Header fields in the order they were received or added. Names compare case-insensitively
/// (RFC 9110 §5.1); repeats are kept, because for some fields order and repetition matter.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    public var count: Int { fields.count }

    /// Makes room for `count` fields in all, so that adding them allocates once.
    package mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Adds a field at the end, keeping any with the same name.
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces all fields of this name with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    /// Removes all fields of this name.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalNames($0.name, name) }
    }

    /// The first value of a field.
    public subscript(name: String) -> String? {
        fields.first { Self.equalNames($0.name, name) }?.value
    }

    /// All values of a field, in order.
    public func values(_ name: String) -> [String] {
        var values: [String] = []
        for field in fields where Self.equalNames(field.name, name) { values.append(field.value) }
        return values
    }

    /// Whether a comma-separated field holds a token, case-insensitively (e.g. `Connection: close`).
    public func containsToken(_ token: String, in name: String) -> Bool {
        fields.contains { field in
            Self.equalNames(field.name, name) && field.value.split(separator: ",").contains { $0.trimmingSpaces().lowercased() == token.lowercased() }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// Whether two field names are equal but for case: `a.lowercased() == b.lowercased()` (names of the
    /// same length in UTF-8), answered byte by byte while both are ASCII, as names nearly always are.
    package static func equalNames(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && equalNamesOfEqualLength(a, b)
    }

    private static func equalNamesOfEqualLength(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        let answer = a.withUTF8 { left in b.withUTF8 { right in equalASCIINames(left, right) } }
        return answer ?? (a.lowercased() == b.lowercased())
    }

    /// Whether two names of the same length are equal but for the case of ASCII letters, or nil if one
    /// of them has a byte beyond ASCII, where only Unicode case mapping can tell.
    private static func equalASCIINames(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool? {
        var equal = true
        for index in 0..<left.count {
            let x = left[index]
            let y = right[index]
            if x | y >= 0x80 { return nil }
            // A difference is noted, not answered at once: a non-ASCII byte further on still sends the
            // names to `lowercased()`, so that such names are compared exactly as they always were.
            if x != y {
                let folded = x | 0x20
                if folded != y | 0x20 || folded < UInt8(ascii: "a") || folded > UInt8(ascii: "z") { equal = false }
            }
        }
        return equal
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace, RFC 9110 §5.6.3).
    package func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
