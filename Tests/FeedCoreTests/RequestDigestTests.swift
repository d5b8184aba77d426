import Testing
import FeedCore

struct RequestDigestTests {
    /// The first 16 bytes of SHA-256 over `<operation>\n<input>` (checked with Python's hashlib).
    @Test(arguments: [
        ("DELETE", "", "d8ad8056c4645ee4f04486aa235d5329"),
        ("POST add", #"{"title":"x"}"#, "d57fed75987578102ac2fe8935f65901"),
    ])
    func digestIsTheStartOfSHA256(operation: String, input: String, expected: String) {
        #expect(RequestDigest.of(operation, Array(input.utf8)) == expected)
    }

    @Test func anotherOperationOrInputIsAnotherDigest() {
        let body = Array(#"{"title":"x"}"#.utf8)
        #expect(RequestDigest.of("POST add", body) != RequestDigest.of("POST remove", body))
        #expect(RequestDigest.of("POST add", body) != RequestDigest.of("POST add", body + [0x20]))
        #expect(RequestDigest.of("PATCH", body) != RequestDigest.of("PUT", body))
    }
}
