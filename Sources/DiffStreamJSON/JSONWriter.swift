import JSONEscaping

/// Writes compact JSON straight into a byte buffer (one line: no raw newlines can appear, which is what
/// an SSE `data:` line needs).
public struct JSONWriter: Sendable {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inlinable public mutating func byte(_ value: UInt8) { bytes.append(value) }

    /// Writes a value.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): flag ? raw("true") : raw("false")
        case .number(let number): write(number)
        case .string(let string): write(string)
        case .array(let elements):
            byte(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { byte(UInt8(ascii: ",")) }
                write(element)
            }
            byte(UInt8(ascii: "]"))
        case .object(let object):
            byte(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { byte(UInt8(ascii: ",")) }
                write(member.key)
                byte(UInt8(ascii: ":"))
                write(member.value)
            }
            byte(UInt8(ascii: "}"))
        }
    }

    /// Writes a number: integers without a fraction, others in Swift's shortest round-trip form.
    public mutating func write(_ number: Double) {
        if number.isNaN || number.isInfinite {
            raw("null")  // JSON has no NaN or infinity; they cannot come from parsed input.
        } else if number == number.rounded(), abs(number) < 9_007_199_254_740_992 {
            write(Int(number))
        } else {
            bytes.append(contentsOf: number.description.utf8)
        }
    }

    /// Writes an integer.
    public mutating func write(_ number: Int) {
        if number >= 0 && number < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(number))
            return
        }
        // The digits from the last, in a buffer on the stack: no `String` made (versions are on every event).
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Writes a string with the escapes JSON requires (RFC 8259 §7): ``JSONStringEscaping``.
    /// - Complexity: O(length of `string`).
    public mutating func write(_ string: String) {
        JSONStringEscaping.append(string, to: &bytes)
    }

    /// Writes a model's canonical bytes as they are.
    @inlinable public mutating func write(_ model: JSONModel) {
        bytes.append(contentsOf: model.bytes)
    }

    /// Writes an id as a JSON string.
    @inlinable public mutating func write(_ id: WireID) {
        write(id.string)
    }

    /// Writes `"key":`.
    public mutating func key(_ key: StaticString) {
        byte(UInt8(ascii: "\""))
        raw(key)
        raw("\":")
    }
}
