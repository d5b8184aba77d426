import HTTPAPI
import Testing

/// What shared caches may keep of a log read's answer.
struct LogCachingTests {
    @Test(arguments: [
        (false, false, true, "public, max-age=31536000, immutable"), (false, false, false, "public, max-age=5"),
        (false, true, true, "public, max-age=5"), (false, true, false, "public, max-age=5"),
        (true, false, true, "private, no-store"), (true, true, false, "private, no-store"),
    ])
    func theHeader(_ needsToken: Bool, _ live: Bool, _ complete: Bool, _ header: String) {
        #expect(LogCaching.of(needsToken: needsToken, live: live, complete: complete).header == header)
    }

    @Test func errorsAreNeverStored() {
        #expect(LogCaching.noStore.header == "no-store")
    }
}
