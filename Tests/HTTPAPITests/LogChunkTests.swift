import HTTPAPI
import Testing

/// Where a log read's batches end: the next multiple of 64, or the head before it.
struct LogChunkTests {
    @Test(arguments: [
        (0, 10, 10, false), (0, 64, 64, true), (0, 100, 64, true), (63, 100, 64, true), (64, 100, 100, false),
        (64, 128, 128, true), (64, 64, 64, false), (127, 127, 127, false), (130, 1000, 192, true),
    ])
    func ends(_ after: Int, _ head: Int, _ end: Int, _ complete: Bool) {
        #expect(LogChunk.end(after: after, head: head) == end)
        #expect(LogChunk.isComplete(after: after, end: LogChunk.end(after: after, head: head)) == complete)
    }
}
