import DiffStreamClient  // alone: no `import DiffStream` or `import DiffStreamJSON` in this file
import Testing

/// `import DiffStreamClient` gives the types its public API is made of (`Snapshot` and `Operation` of
/// DiffStream; `WireSection`, `WireItem`, `JSONModel` of DiffStreamJSON): this file compiles only then.
struct ExportsTests {
    @Test func publicAPITypesComeWithTheModule() throws {
        let model = try JSONModel(parsing: #"{"title":"Hi"}"#)
        let update = WireFeedUpdate(feed: "home", snapshot: Snapshot<WireSection, WireItem>(), version: 1, history: nil, eventID: "ds1.h.1",
                                    change: .full(.first), operations: [] as [DiffStream.Operation<WireSection, WireItem>])
        #expect(update.snapshot.numberOfItems == 0)
        #expect(model.description == #"{"title":"Hi"}"#)
    }
}
