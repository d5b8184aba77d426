import DiffStream
import Testing
@testable import DiffStreamJSON

/// The log answer's reader: its envelope, and the snapshot and batches read as the event stream's data.
struct WireLogPageTests {
    @Test func snapshotAnswer() throws {
        let text = #"{"feed":"f","history":"aaaa","snapshot":{"feed":"f","history":"aaaa","version":3,"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"b":1,"a":[1.50]}}]}]},"batches":[],"next":"ds1.aaaa.3","upToDate":true,"cursor":"1234"}"#
        let page = try WireCodec.decodeLogPage(Array(text.utf8))
        #expect(page.feed == "f")
        #expect(page.history == "aaaa")
        #expect(page.next == "ds1.aaaa.3")
        #expect(page.upToDate)
        #expect(page.cursor == "1234")
        #expect(page.batches.isEmpty)
        #expect(page.snapshot?.version == 3)
        guard case .success(.snapshot(let snapshot)) = page.snapshot?.body else { Issue.record("no snapshot"); return }
        #expect(snapshot.sections.map(\.id) == [WireID("s")])
        // The model is kept in its canonical form, as the event reader keeps it.
        #expect(snapshot.items(inSection: WireID("s"))?.first?.model.description == #"{"a":[1.5],"b":1}"#)
    }

    @Test func batchesAnswer() throws {
        let text = """
        { "feed" : "f", "batches" : [ {"feed":"f","history":"h","from":4,"version":5,"ops":[{"op":"delete","item":"a"}]},
          {"feed":"f","history":"h","from":5,"version":6,"ops":[]} ], "next":"ds1.h.6", "upToDate":false, "cursor": 77, "extra": {"x":[1]} }
        """
        let page = try WireCodec.decodeLogPage(Array(text.utf8))
        #expect(page.snapshot == nil)
        #expect(page.batches.map(\.from) == [4, 5])
        #expect(page.batches.map(\.version) == [5, 6])
        #expect(page.upToDate == false)
        #expect(page.cursor == "77")  // a number's text: passed back as it came
        guard case .success(.batch(let batch)) = page.batches.first?.body else { Issue.record("no batch"); return }
        #expect(batch.operations == [.delete(WireID("a"))])
    }

    @Test(arguments: [
        (#"[1]"#, "$: expected an object"),
        (#"{"batches":{}}"#, "batches: expected an array"),
        (#"{"batches":[{"from":1,"version":2}]}"#, "batches[0].ops: expected an array"),
        (#"{"snapshot":{"version":1,"sections":3}}"#, "snapshot"),
    ])
    func shapesAreNamed(text: String, expected: String) {
        #expect {
            _ = try WireCodec.decodeLogPage(Array(text.utf8))
        } throws: { error in
            guard let error = error as? WireError, case .shape = error else { return false }
            return error.description.hasPrefix(expected)
        }
    }

    @Test(arguments: [#"{"feed":"f""#, #"{"feed":"f"} x"#, #"{"feed":"f",}"#, #"{"batches":[1,]}"#])
    func malformedIsMalformed(text: String) {
        #expect {
            _ = try WireCodec.decodeLogPage(Array(text.utf8))
        } throws: { error in
            if case .malformed = error as? WireError { true } else { false }
        }
    }
}
