import DiffStreamJSON
import Testing

struct WireIDTests {
    @Test func idsCompareByCodePointsNotCanonicalEquivalence() {
        let composed = WireID("\u{E9}")
        let decomposed = WireID("e\u{301}")
        #expect("\u{E9}" == "e\u{301}")  // what Swift's String == says, and why WireID exists
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(composed == WireID("\u{E9}") && composed.hashValue == WireID("\u{E9}").hashValue)
        #expect(WireID("a\u{301}\u{323}") != WireID("a\u{323}\u{301}"))
    }

    @Test(arguments: [("", false), ("a", true), (String(repeating: "x", count: 256), true), (String(repeating: "x", count: 257), false),
                      (String(repeating: "é", count: 128), true), (String(repeating: "é", count: 129), false)])
    func validity(id: String, valid: Bool) {
        #expect(WireID.isValid(id) == valid)
    }

    @Test func orderIsCodePointOrder() {
        #expect(WireID("Z") < WireID("a"))
        #expect(WireID("a") < WireID("ab"))
        #expect(WireID("\u{FFFF}") < WireID("😀"))
    }
}
