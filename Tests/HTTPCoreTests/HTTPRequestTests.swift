import HTTPCore
import Testing

struct HTTPRequestTests {
    /// The target split into the path as sent, the decoded path and the query (RFC 9112 §3.2.1: the
    /// origin form; RFC 3986 §2.1: percent-encoding).
    @Test(arguments: [
        ("/feeds/news/events", "/feeds/news/events", "/feeds/news/events", []),
        ("/feeds/a%20b?x=1&y=%41", "/feeds/a%20b", "/feeds/a b", [("x", "1"), ("y", "A")]),
        ("/?", "/", "/", []),
        ("?q", "", "", [("q", "")]),
        ("", "", "", []),
        ("/bad%zz", "/bad%zz", "/bad%zz", []),
    ] as [(String, String, String, [(String, String)])])
    func splitsTheTarget(target: String, rawPath: String, path: String, query: [(String, String)]) {
        let request = HTTPRequest(method: "GET", target: target)
        #expect(request.rawPath == rawPath)
        #expect(request.path == path)
        #expect(request.query.map(\.name) == query.map(\.0))
        #expect(request.query.map(\.value) == query.map(\.1))
    }

    @Test(arguments: ["/plain/path", "/a%2Fb", "/%E2%82%AC", "/%"])
    func decodingTextWithoutEscapesGivesItBack(text: String) {
        let decoded = PercentDecoding.decode(text)
        if text.contains("%") {
            #expect(decoded != text)
        } else {
            #expect(decoded == text)
        }
    }
}
