/// One command as Redis reads it: an array of bulk strings (RESP: `*<count>\r\n`, then
/// `$<length>\r\n<bytes>\r\n` for each argument), binary safe, built argument by argument in one
/// buffer and handed to hiredis as it is (`redisAppendFormattedCommand`).
///
/// Building it directly spares a caller the array per argument and the array of arrays that an
/// argument vector needs (a commit's 28 arguments cost about 25 allocations that way). The count at
/// the front is written as arguments are appended, right-aligned in room kept before the first
/// argument, so the count always matches what was appended.
public struct RedisCommand: Sendable {
    /// `*`, up to 19 digits, CRLF.
    private static let headerRoom = 22
    private var buffer: [UInt8]
    /// Where the RESP starts in ``buffer`` (the count's `*`).
    private var start = headerRoom
    /// The arguments appended, the name included.
    public private(set) var count = 0
    /// The name's bytes in ``buffer``.
    private var nameRange = 0..<0

    /// A command named `name` (its first argument, such as `EVALSHA`).
    /// - Parameter capacity: the bytes of the arguments to come, if known (one allocation).
    public init(_ name: String, capacity: Int = 64) {
        buffer = [UInt8](repeating: 0, count: Self.headerRoom)
        buffer.reserveCapacity(Self.headerRoom + 16 + name.utf8.count + capacity)
        append(name)
    }

    /// The command of an argument vector (the first argument is its name).
    public init(_ arguments: [[UInt8]]) {
        buffer = [UInt8](repeating: 0, count: Self.headerRoom)
        buffer.reserveCapacity(arguments.reduce(Self.headerRoom) { $0 + $1.count + 16 })
        writeCount()
        for argument in arguments { append(argument) }
    }

    /// The RESP bytes.
    public var resp: ArraySlice<UInt8> { buffer[start...] }

    /// The command's name, upper-cased, for errors (never the data after it).
    public var name: String {
        count == 0 ? "(empty command)" : String(decoding: buffer[nameRange], as: UTF8.self).uppercased()
    }

    /// Appends one argument.
    public mutating func append(_ argument: [UInt8]) {
        argument.withUnsafeBufferPointer { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends one argument: the text's UTF-8 bytes.
    public mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends one argument: the number in decimal.
    public mutating func append(_ number: Int) {
        let magnitude = number.magnitude
        beginArgument(length: Self.digitCount(magnitude) + (number < 0 ? 1 : 0))
        if number < 0 { buffer.append(UInt8(ascii: "-")) }
        appendDigits(magnitude)
        endArgument()
    }

    /// Appends one argument made of `parts` written one after another (a key from its prefix, kind
    /// and name, say), without a buffer of its own.
    public mutating func append(concatenating parts: String, _ more: String, _ evenMore: String = "", _ last: String = "", _ suffix: String = "") {
        let length = parts.utf8.count + more.utf8.count + evenMore.utf8.count + last.utf8.count + suffix.utf8.count
        beginArgument(length: length)
        buffer.append(contentsOf: parts.utf8)
        buffer.append(contentsOf: more.utf8)
        buffer.append(contentsOf: evenMore.utf8)
        buffer.append(contentsOf: last.utf8)
        buffer.append(contentsOf: suffix.utf8)
        endArgument()
    }

    /// Appends one argument: `bytes`.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        beginArgument(length: bytes.count)
        buffer.append(contentsOf: bytes)
        endArgument()
    }

    /// `$<length>\r\n`, and the count brought up to date.
    private mutating func beginArgument(length: Int) {
        let first = count == 0
        count += 1
        writeCount()
        appendDecimal(UInt8(ascii: "$"), length)
        if first { nameRange = buffer.count..<(buffer.count + length) }
    }

    private mutating func endArgument() {
        buffer.append(13)
        buffer.append(10)
    }

    /// Writes `*<count>\r\n` so that it ends where the first argument starts.
    private mutating func writeCount() {
        let digits = Self.digitCount(UInt(count))
        start = Self.headerRoom - digits - 3
        buffer.withUnsafeMutableBufferPointer { bytes in
            bytes[start] = UInt8(ascii: "*")
            var value = count
            for index in stride(from: start + digits, to: start, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            bytes[Self.headerRoom - 2] = 13
            bytes[Self.headerRoom - 1] = 10
        }
    }

    /// `marker`, the number in decimal, CRLF.
    private mutating func appendDecimal(_ marker: UInt8, _ number: Int) {
        buffer.append(marker)
        appendDigits(number.magnitude)
        buffer.append(13)
        buffer.append(10)
    }

    /// The number's decimal digits, most significant first.
    private mutating func appendDigits(_ number: UInt) {
        var divisor: UInt = 1
        while divisor <= number / 10 { divisor *= 10 }
        while divisor > 0 {
            buffer.append(UInt8(ascii: "0") + UInt8(number / divisor % 10))
            divisor /= 10
        }
    }

    private static func digitCount(_ number: UInt) -> Int {
        var count = 1
        var rest = number / 10
        while rest > 0 { count += 1; rest /= 10 }
        return count
    }
}
