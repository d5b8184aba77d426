import DiffStreamJSON
import Testing
import TestSupport

/// Seeded random inputs against oracles; every failure names its seed.
struct JSONPropertyTests {
    /// Random exact values, each written in two random spellings, read back: the models are equal to
    /// each other and their canonical text is the one the independent oracle computes.
    @Test(arguments: 0..<8)
    func randomValuesRoundTripAndCompareEqual(batch: Int) throws {
        for round in 0..<250 {
            let seed = UInt64(batch * 1000 + round)
            var rng = SeededGenerator(seed: seed)
            let value = ExactValue.random(using: &rng)
            let first = value.randomText(using: &rng)
            let second = value.randomText(using: &rng)
            let a = try JSONModel(parsing: first)
            let b = try JSONModel(parsing: second)
            #expect(a == b, "seed \(seed): \(first) vs \(second)")
            #expect(a.description == value.canonical, "seed \(seed): \(first)")
            #expect(try JSONModel(parsing: a.description) == a, "seed \(seed)")
            // The tree parser reads the same text to the same value (numbers rounded alike).
            #expect((try? JSONParser.parse(first, numbersBeyondDouble: .infinity)) == (try? JSONParser.parse(a.description, numbersBeyondDouble: .infinity)), "seed \(seed)")
        }
    }

    /// Changing one digit of one number makes a different model.
    @Test func aChangedDigitIsADifferentModel() throws {
        for seed in UInt64(0)..<300 {
            var rng = SeededGenerator(seed: seed)
            let digits = String(Int.random(in: 1...9, using: &rng)) + String((0..<Int.random(in: 15...30, using: &rng)).map { _ in Character(String(Int.random(in: 0...9, using: &rng))) })
            let position = Int.random(in: 1..<digits.count, using: &rng)
            var changed = Array(digits)
            changed[position] = changed[position] == "9" ? "8" : Character(String(Int(String(changed[position]))! + 1))
            let exponent = Int.random(in: -30...30, using: &rng)
            let a = try JSONModel(parsing: "{\"n\":\(digits)e\(exponent)}")
            let b = try JSONModel(parsing: "{\"n\":\(String(changed))e\(exponent)}")
            #expect(a != b, "seed \(seed)")
        }
    }

    /// Random bytes and mutations of valid documents never crash any reader; they parse or fail with an
    /// offset inside the input, and both readers agree on which.
    @Test(arguments: 0..<4)
    func randomAndMutatedBytesNeverCrash(batch: Int) throws {
        let valid = Array(#"{"sections":[{"id":"s","model":{"t":"é\n","n":[1.5e3,-0,true,null]},"items":[{"id":"a","kind":"k","model":{"b":1,"a":"\ud83d\ude00"}}]}]}"#.utf8)
        for round in 0..<500 {
            let seed = UInt64(batch * 10000 + round)
            var rng = SeededGenerator(seed: seed)
            let bytes = JSONFuzzInput.make(round: round, valid: valid, randomEvery: 3, maxMutations: 4, using: &rng)
            let readers = BothReaders(bytes)
            #expect((readers.treeError == nil) == (readers.modelError == nil), "seed \(seed): readers disagree: \(String(describing: readers.treeError)) / \(String(describing: readers.modelError))")
            for error in [readers.treeError, readers.modelError].compactMap({ $0 }) {
                #expect((0...bytes.count).contains(error.offset), "seed \(seed): offset \(error.offset)")
            }
            do {
                let snapshot = try WireCodec.decodeSnapshot(bytes)
                #expect(try WireCodec.decodeSnapshot(WireCodec.encode(snapshot)) == snapshot, "seed \(seed)")
            } catch .malformed(let error) {
                #expect((0...bytes.count).contains(error.offset), "seed \(seed): offset \(error.offset)")
                #expect(readers.modelError != nil, "seed \(seed): the snapshot reader refused JSON the model reader accepts")
            } catch {
                #expect(readers.modelError == nil, "seed \(seed): a shape error for malformed JSON: \(error)")
            }
        }
    }
}
