/// The canonical spelling of a JSON number: its exact decimal value, laid out as ECMAScript's
/// `Number::toString` lays out digits (ECMA-262 §6.1.6.1.20), but with every significant digit kept.
///
/// With the value written as `D × 10^q`, where `D` has `n` digits and no leading or trailing zeros, and
/// `p = n + q` (where the decimal point falls):
/// - zero (also `-0`, `0.000`, `0e7`) is `0`; a negative value starts with `-`;
/// - `n ≤ p ≤ 21`: the digits and `p − n` zeros (`12345678901234567890`, `100`);
/// - `0 < p ≤ 21`: the digits with a point after the first `p` (`1.5`, `123.25`);
/// - `−6 < p ≤ 0`: `0.`, `−p` zeros and the digits (`0.001`);
/// - otherwise: the first digit, `.` and the others if any, `e`, the sign (`+` or `-`) and `p − 1`
///   (`1e+400`, `1.5e-7`, `1.2345678901234567891e+25`).
///
/// Equal values get equal spellings, different values different ones, and a number that a `Double`
/// holds exactly with its shortest digits is spelled as JavaScript's `String(x)` spells it. The exponent
/// may have any number of digits; the output is never longer than the input plus 25 bytes.
enum CanonicalNumber {
    /// Writes the canonical spelling of `[-] integer [. fraction] [e [-] exponent]` (grammar already
    /// checked: digits only, `integer` without leading zeros).
    static func write(
        negative: Bool, integer: UnsafeBufferPointer<UInt8>, fraction: UnsafeBufferPointer<UInt8>,
        exponent: UnsafeBufferPointer<UInt8>?, exponentNegative: Bool, into out: inout [UInt8]
    ) {
        let total = integer.count + fraction.count
        @inline(__always) func digit(_ index: Int) -> UInt8 {
            index < integer.count ? integer[index] : fraction[index - integer.count]
        }
        var first = 0
        while first < total, digit(first) == UInt8(ascii: "0") { first += 1 }
        guard first < total else {
            out.append(UInt8(ascii: "0"))
            return
        }
        var last = total - 1
        while digit(last) == UInt8(ascii: "0") { last -= 1 }
        let n = last - first + 1
        let trailing = total - 1 - last
        // p = exponent + k, with k bounded by the input's length.
        let k = n - fraction.count + trailing
        func appendDigits(_ range: Range<Int>) {
            for index in range { out.append(digit(first + index)) }
        }
        if negative { out.append(UInt8(ascii: "-")) }

        var exponentDigits = exponent.map { Array($0.drop { $0 == UInt8(ascii: "0") }) } ?? []
        if exponentDigits.count > 18 {
            // |exponent| ≥ 10^18: the point is far out either way; spell e = exponent + k − 1 exactly.
            appendDigits(0..<1)
            if n > 1 {
                out.append(UInt8(ascii: "."))
                appendDigits(1..<n)
            }
            out.append(UInt8(ascii: "e"))
            out.append(exponentNegative ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            add(exponentNegative ? -(k - 1) : k - 1, to: &exponentDigits)
            out.append(contentsOf: exponentDigits)
            return
        }
        var exponentValue = 0
        for byte in exponentDigits { exponentValue = exponentValue * 10 + Int(byte - UInt8(ascii: "0")) }
        if exponentNegative { exponentValue = -exponentValue }
        let p = exponentValue + k
        if n <= p && p <= 21 {
            appendDigits(0..<n)
            for _ in 0..<(p - n) { out.append(UInt8(ascii: "0")) }
        } else if 0 < p && p <= 21 {
            appendDigits(0..<p)
            out.append(UInt8(ascii: "."))
            appendDigits(p..<n)
        } else if -6 < p && p <= 0 {
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(ascii: "."))
            for _ in 0..<(-p) { out.append(UInt8(ascii: "0")) }
            appendDigits(0..<n)
        } else {
            appendDigits(0..<1)
            if n > 1 {
                out.append(UInt8(ascii: "."))
                appendDigits(1..<n)
            }
            out.append(UInt8(ascii: "e"))
            let e = p - 1
            out.append(e < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            out.append(contentsOf: String(e.magnitude).utf8)
        }
    }

    /// Adds a small signed number to a big decimal magnitude (ASCII digits, no leading zeros) that is
    /// larger than the small one's magnitude. Keeps the result without leading zeros.
    static func add(_ delta: Int, to digits: inout [UInt8]) {
        var remaining = delta.magnitude
        var index = digits.count - 1
        if delta >= 0 {
            var carry: UInt = 0
            while index >= 0 && (remaining > 0 || carry > 0) {
                let sum = UInt(digits[index] - UInt8(ascii: "0")) + remaining % 10 + carry
                digits[index] = UInt8(ascii: "0") + UInt8(sum % 10)
                carry = sum / 10
                remaining /= 10
                index -= 1
            }
            if carry > 0 { digits.insert(UInt8(ascii: "1"), at: 0) }
        } else {
            var borrow: UInt = 0
            while index >= 0 && (remaining > 0 || borrow > 0) {
                var value = Int(digits[index] - UInt8(ascii: "0")) - Int(remaining % 10) - Int(borrow)
                borrow = 0
                if value < 0 {
                    value += 10
                    borrow = 1
                }
                digits[index] = UInt8(ascii: "0") + UInt8(value)
                remaining /= 10
                index -= 1
            }
            let zeros = digits.prefix { $0 == UInt8(ascii: "0") }.count
            digits.removeFirst(min(zeros, digits.count - 1))
        }
    }
}
