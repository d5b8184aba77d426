import HTTPCore
import Testing

struct EntityTagTests {
    @Test(arguments: [(#""abc""#, #""abc-gz""#), (#"W/"abc""#, #"W/"abc""#), ("abc", "abc"), (#"""#, #"""#)])
    func theGzipVariantHasItsOwnStrongTag(tag: String, variant: String) {
        #expect(EntityTag.gzipVariant(of: tag) == variant)
    }

    /// RFC 9110 §13.1.2: a list, weak comparison (`W/` ignored), `*` for any current representation.
    @Test(arguments: [
        (#""a""#, #""a""#), (#"W/"a""#, #""a""#), (#" "x" , W/"b" "#, #""b""#), (" * ", #""a""#),
        (#""c""#, nil), (#""a-gz""#, nil), ("", nil), (#""a"x"#, nil),
    ] as [(String, String?)])
    func ifNoneMatchNamesACandidate(field: String, matched: String?) {
        #expect(EntityTag.match(ifNoneMatch: field, among: [#""a""#, #""b""#]) == matched)
    }
}
