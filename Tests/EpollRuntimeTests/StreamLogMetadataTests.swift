@testable import EpollRuntime
import Logging
import Testing

struct StreamLogMetadataTests {
    /// What the disconnect line gets back is what the handler gave, as text, whatever the number of
    /// entries (none, the usual one, several).
    @Test(arguments: [
        [:],
        ["feed": "news"],
        ["feed": "a-feed-name-longer-than-fifteen-bytes", "feeds": "3", "user": "alice"],
    ] as [Logger.Metadata])
    func keepsTheHandlersMetadataAsText(metadata: Logger.Metadata) {
        #expect(StreamLogMetadata(metadata).metadata == metadata)
    }

    @Test func valuesThatAreNotTextAreKeptAsTheirDescription() {
        let kept = StreamLogMetadata(["count": .stringConvertible(42), "list": .array(["a"])]).metadata
        #expect(kept == ["count": "42", "list": .string(Logger.MetadataValue.array(["a"]).description)])
    }
}
