/// Inputs for the JSON readers' property tests: random bytes biased towards JSON's punctuation, or a
/// valid document with a few bytes changed, removed, inserted or repeated. Shared by the readers' tests,
/// so every reader is fuzzed the same way.
public enum JSONFuzzInput {
    /// The input of round `round`: every `randomEvery`-th round random bytes (up to 40), the others
    /// `valid` with 1 to `maxMutations` mutations, all drawn from `rng`.
    public static func make(round: Int, valid: [UInt8], randomEvery: Int, maxMutations: Int, using rng: inout SeededGenerator) -> [UInt8] {
        if round % randomEvery == 0 {
            return (0..<Int.random(in: 0...40, using: &rng)).map { _ in
                Bool.random(using: &rng) ? Array("{}[]\",:0123456789.eE+-tfnul\\ ".utf8).randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng)
            }
        }
        var bytes = valid
        for _ in 0..<Int.random(in: 1...maxMutations, using: &rng) {
            let index = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0...3, using: &rng) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes.remove(at: index)
            case 2: bytes.insert(Array("{}[]\",:\\0e".utf8).randomElement(using: &rng)!, at: index)
            default: bytes.insert(contentsOf: bytes[index..<min(bytes.count, index + 8)], at: index)
            }
        }
        return bytes
    }
}
