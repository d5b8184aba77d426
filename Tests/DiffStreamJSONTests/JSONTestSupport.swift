import Foundation
import DiffStreamJSON
import TestSupport

/// Both readers on the same bytes: the tree parser and the canonicalising scanner.
struct BothReaders {
    var tree: Result<JSONValue, JSONParseError>
    var model: Result<JSONModel, JSONParseError>

    init(_ bytes: [UInt8]) {
        tree = Result { () throws(JSONParseError) in try JSONParser.parse(bytes, numbersBeyondDouble: .infinity) }
        model = Result { () throws(JSONParseError) in try JSONModel(parsing: bytes) }
    }

    init(_ text: String) { self.init(Array(text.utf8)) }

    var treeError: JSONParseError? { if case .failure(let error) = tree { error } else { nil } }
    var modelError: JSONParseError? { if case .failure(let error) = model { error } else { nil } }
    var canonical: String? { if case .success(let model) = model { model.description } else { nil } }
}

/// An exact JSON value for property tests: numbers as decimal digits and an exponent, strings as scalars.
indirect enum ExactValue {
    case null, bool(Bool)
    /// `(negative ? -1 : 1) × digits × 10^exponent`; `digits` has no leading zeros ("" is zero).
    case number(negative: Bool, digits: String, exponent: Int)
    case string([Unicode.Scalar])
    case array([ExactValue])
    case object([(key: [Unicode.Scalar], value: ExactValue)])

    static func random(using rng: inout SeededGenerator, depth: Int = 0) -> ExactValue {
        switch Int.random(in: 0...(depth > 3 ? 3 : 5), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2:
            let length = Int.random(in: 0...(Bool.random(using: &rng) ? 3 : 25), using: &rng)
            var digits = length == 0 ? "" : String(Int.random(in: 1...9, using: &rng))
            for _ in 0..<max(0, length - 1) { digits += String(Int.random(in: 0...9, using: &rng)) }
            while digits.hasSuffix("0") { digits.removeLast() }
            let exponent = Bool.random(using: &rng) ? Int.random(in: -4...4, using: &rng) : Int.random(in: -500...500, using: &rng)
            return .number(negative: Bool.random(using: &rng), digits: digits, exponent: digits.isEmpty ? 0 : exponent)
        case 3: return .string(randomScalars(using: &rng))
        case 4: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in random(using: &rng, depth: depth + 1) })
        default:
            var keys: [[Unicode.Scalar]] = []
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                let key = randomScalars(using: &rng)
                if !keys.contains(where: { $0 == key }) { keys.append(key) }
            }
            return .object(keys.map { (key: $0, value: random(using: &rng, depth: depth + 1)) })
        }
    }

    static func randomScalars(using rng: inout SeededGenerator) -> [Unicode.Scalar] {
        let pool: [Unicode.Scalar] = ["a", "b", "Z", "0", " ", "\"", "\\", "/", "\n", "\u{1}", "\u{1F}", "\u{7F}", "é", "e", "\u{301}",
                                      "\u{2028}", "\u{FFFF}", "😀", "𝄞", "中"]
        return (0..<Int.random(in: 0...6, using: &rng)).map { _ in pool.randomElement(using: &rng)! }
    }

    /// One of many JSON spellings of this value: random whitespace, key order, escapes and number forms.
    func randomText(using rng: inout SeededGenerator) -> String {
        func space() -> String { ["", "", " ", "\n", "\t ", "\r\n"].randomElement(using: &rng)! }
        switch self {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let negative, let digits, let exponent):
            if digits.isEmpty { return ["0", "-0", "0.0", "0e5", "-0.00E-3"].randomElement(using: &rng)! }
            let zeros = Int.random(in: 0...2, using: &rng)
            let mantissa = Array(digits + String(repeating: "0", count: zeros))
            let point = Int.random(in: 0...mantissa.count, using: &rng)
            let integer = point == 0 ? "0" : String(mantissa[..<point])
            let fraction = String(mantissa[point...])
            let shown = exponent - zeros + fraction.count
            var text = (negative ? "-" : "") + integer + (fraction.isEmpty ? "" : "." + fraction)
            if shown != 0 || Bool.random(using: &rng) {
                text += ["e", "E"].randomElement(using: &rng)! + (shown < 0 ? "-" : ["", "+"].randomElement(using: &rng)!) + String(shown.magnitude)
            }
            return text
        case .string(let scalars): return Self.quote(scalars, using: &rng)
        case .array(let elements):
            return "[" + space() + elements.map { $0.randomText(using: &rng) }.joined(separator: space() + "," + space()) + space() + "]"
        case .object(let members):
            return "{" + space() + members.shuffled(using: &rng).map { member in
                Self.quote(member.key, using: &rng) + space() + ":" + space() + member.value.randomText(using: &rng)
            }.joined(separator: space() + "," + space()) + space() + "}"
        }
    }

    static func quote(_ scalars: [Unicode.Scalar], using rng: inout SeededGenerator) -> String {
        var text = "\""
        for scalar in scalars {
            let escaped = Bool.random(using: &rng)
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += escaped ? "\\\\" : "\\u005C"
            case "\n": text += escaped ? "\\n" : "\\u000a"
            case _ where scalar.value < 0x20: text += String(format: "\\u%04X", scalar.value)
            case "/": text += escaped ? "\\/" : "/"
            case _ where escaped && scalar.value > 0xFFFF:
                let value = scalar.value - 0x10000
                text += String(format: "\\u%04x\\u%04x", 0xD800 + (value >> 10), 0xDC00 + (value & 0x3FF))
            case _ where escaped: text += String(format: "\\u%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }

    /// The canonical spelling, computed from the rules in docs/protocol.md (independently of the code).
    var canonical: String {
        switch self {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let negative, let digits, let exponent):
            if digits.isEmpty { return "0" }
            let n = digits.count
            let p = n + exponent
            let d = Array(digits)
            var text = negative ? "-" : ""
            if n <= p && p <= 21 {
                text += digits + String(repeating: "0", count: p - n)
            } else if 0 < p && p <= 21 {
                text += String(d[..<p]) + "." + String(d[p...])
            } else if -6 < p && p <= 0 {
                text += "0." + String(repeating: "0", count: -p) + digits
            } else {
                text += String(d[0]) + (n > 1 ? "." + String(d[1...]) : "") + "e" + (p - 1 < 0 ? "-" : "+") + String((p - 1).magnitude)
            }
            return text
        case .string(let scalars): return Self.canonicalString(scalars)
        case .array(let elements): return "[" + elements.map(\.canonical).joined(separator: ",") + "]"
        case .object(let members):
            let sorted = members.map { (key: Self.canonicalString($0.key), value: $0.value.canonical) }
                .sorted { Array($0.key.utf8.dropFirst().dropLast()).lexicographicallyPrecedes(Array($1.key.utf8.dropFirst().dropLast())) }
            return "{" + sorted.map { $0.key + ":" + $0.value }.joined(separator: ",") + "}"
        }
    }

    static func canonicalString(_ scalars: [Unicode.Scalar]) -> String {
        var text = "\""
        for scalar in scalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\u{8}": text += "\\b"
            case "\u{C}": text += "\\f"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20: text += String(format: "\\u%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }
}
