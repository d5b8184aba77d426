import DiffStreamJSON

/// Byte ranges of JSON values inside a text already known to be valid JSON (it parsed), so that a
/// batch's models can be kept as the server wrote them: a ``JSONValue`` holds numbers as `Double`s
/// and would round `1.23456789012345678901234e+23` or lose `1e+400`.
enum RawJSON {
    /// The members of the object starting at `start`: each key and its value's range.
    /// - Complexity: O(n) in the object's length.
    static func members(_ bytes: [UInt8], objectAt start: Int) -> [(key: String, value: Range<Int>)] {
        var i = skipSpace(bytes, start)
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return [] }
        i += 1
        var result: [(key: String, value: Range<Int>)] = []
        while true {
            i = skipSpace(bytes, i)
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return result }
            let keyEnd = skipString(bytes, i)
            let key = (try? JSONParser.parse(bytes[i..<keyEnd]))?.stringValue ?? ""
            i = skipSpace(bytes, keyEnd)
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return result }
            let valueStart = skipSpace(bytes, i + 1)
            let valueEnd = skipValue(bytes, valueStart)
            result.append((key, valueStart..<valueEnd))
            i = skipSpace(bytes, valueEnd)
            guard i < bytes.count, bytes[i] == UInt8(ascii: ",") else { return result }
            i += 1
        }
    }

    /// The elements of the array starting at `start`.
    static func elements(_ bytes: [UInt8], arrayAt start: Int) -> [Range<Int>] {
        var i = skipSpace(bytes, start)
        guard i < bytes.count, bytes[i] == UInt8(ascii: "[") else { return [] }
        i = skipSpace(bytes, i + 1)
        var result: [Range<Int>] = []
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { return result }
        while i < bytes.count {
            let end = skipValue(bytes, i)
            result.append(i..<end)
            i = skipSpace(bytes, end)
            guard i < bytes.count, bytes[i] == UInt8(ascii: ",") else { return result }
            i = skipSpace(bytes, i + 1)
        }
        return result
    }

    static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var i = start
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        return i
    }

    /// The index just after the string starting at `start` (a `"`).
    static func skipString(_ bytes: [UInt8], _ start: Int) -> Int {
        var i = start + 1
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i + 1
            default: i += 1
            }
        }
        return bytes.count
    }

    /// The index just after the value starting at `start`.
    static func skipValue(_ bytes: [UInt8], _ start: Int) -> Int {
        guard start < bytes.count else { return start }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return skipString(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var i = start
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""): i = skipString(bytes, i); continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            return bytes.count
        default:
            var i = start
            while i < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 }
            return i
        }
    }

    /// The batch's operations with every model replaced by its exact canonical form read from `bytes`
    /// (the event's data), where the `JSONValue` decoding rounded it.
    static func exactModels(_ batch: WireBatch, data bytes: [UInt8]) -> WireBatch {
        guard let ops = members(bytes, objectAt: 0).first(where: { $0.key == "ops" }) else { return batch }
        let elements = elements(bytes, arrayAt: ops.value.lowerBound)
        guard elements.count == batch.operations.count else { return batch }
        func model(_ range: Range<Int>?) -> JSONModel? {
            guard let range else { return nil }
            return try? JSONModel(parsing: bytes[range])
        }
        func member(_ key: String, in range: Range<Int>) -> Range<Int>? {
            members(bytes, objectAt: range.lowerBound).first(where: { $0.key == key })?.value
        }
        var operations = batch.operations
        for (index, range) in elements.enumerated() {
            switch operations[index] {
            case .insert(var item, let section, let before):
                if let exact = model(member("item", in: range).flatMap { member("model", in: $0) }) { item.model = exact }
                operations[index] = .insert(item, section: section, before: before)
            case .update(var item):
                if let exact = model(member("model", in: range)) { item.model = exact }
                operations[index] = .update(item)
            case .insertSection(var section, let before):
                if let exact = model(member("section", in: range).flatMap { member("model", in: $0) }) { section.model = exact }
                operations[index] = .insertSection(section, before: before)
            case .updateSection(var section):
                if let exact = model(member("model", in: range)) { section.model = exact }
                operations[index] = .updateSection(section)
            default:
                break
            }
        }
        return WireBatch(operations)
    }
}
