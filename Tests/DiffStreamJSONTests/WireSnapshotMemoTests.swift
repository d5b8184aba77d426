import DiffStream
import DiffStreamJSON
import TestSupport
import Testing

/// ``WireSnapshotMemo``: a document read with the memo of the one before it (the items whose bytes are
/// the same are taken from the memo) gives the same snapshot, and the same error, as read without one.
/// The oracle is `WireCodec.decodeSnapshot` without a memo, on seeded sequences of documents that
/// change the way `PUT`s do: items changed, inserted, removed, moved, spelled differently, made invalid.
struct WireSnapshotMemoTests {
    /// One item as text: its id, kind and model, with the key order and spacing `rng` picks.
    static func itemText(id: String, kind: String, model: ExactValue?, using rng: inout SeededGenerator) -> String {
        var members = [#""id":"\#(id)""#, #""kind":"\#(kind)""#]
        if let model { members.append(#""model":"# + model.randomText(using: &rng)) }
        if Int.random(in: 0..<8, using: &rng) == 0 { members.append(#""extra":[1,{"b":2,"a":1}]"#) }
        members.shuffle(using: &rng)
        let space = Int.random(in: 0..<6, using: &rng) == 0 ? " " : ""
        return "{" + space + members.joined(separator: "," + space) + space + "}"
    }

    /// A document of `items` (text each) in `sections` sections, with an occasional damage.
    static func document(_ items: [String], sections: Int, using rng: inout SeededGenerator) -> [UInt8] {
        var parts: [String] = []
        let perSection = max(1, (items.count + sections - 1) / max(1, sections))
        var index = 0, section = 0
        repeat {
            let slice = items[min(index, items.count)..<min(index + perSection, items.count)]
            parts.append(#"{"id":"s\#(section)","model":{"t":\#(section)},"items":["# + slice.joined(separator: ",") + "]}")
            index += perSection
            section += 1
        } while index < items.count
        var text = #"{"sections":["# + parts.joined(separator: ",") + "]}"
        switch Int.random(in: 0..<20, using: &rng) {
        case 0: text.removeLast(Int.random(in: 1...min(5, text.count), using: &rng))  // cut short
        case 1: text += " x"  // trailing data
        default: break
        }
        return Array(text.utf8)
    }

    /// The snapshot read (compared item by item, model fingerprints included) and its encoding, or the error.
    static func outcome(_ bytes: [UInt8], memo: WireSnapshotMemo?) -> Result<Read, WireError> {
        Result { () throws(WireError) in
            let snapshot = if let memo { try WireCodec.decodeSnapshot(bytes, memo: memo) } else { try WireCodec.decodeSnapshot(bytes) }
            return Read(snapshot: snapshot, encoded: WireCodec.encode(snapshot))
        }
    }

    struct Read: Equatable {
        var snapshot: WireSnapshot
        var encoded: [UInt8]
        static func == (lhs: Read, rhs: Read) -> Bool {
            lhs.snapshot == rhs.snapshot && lhs.encoded == rhs.encoded
                && lhs.snapshot.itemIDs.allSatisfy { lhs.snapshot.item(withID: $0)?.model.fingerprint == rhs.snapshot.item(withID: $0)?.model.fingerprint }
        }
    }

    @Test(arguments: 0..<40)
    func aDocumentReadWithTheMemoIsReadAsWithout(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var nextID = 0
        func newItem(_ rng: inout SeededGenerator) -> String {
            nextID += 1
            let kind = ["card", "row", "k\\u0069nd", "banner"].randomElement(using: &rng)!
            let model: ExactValue? = Bool.random(using: &rng) ? .random(using: &rng) : (Bool.random(using: &rng) ? .null : nil)
            return Self.itemText(id: "i\(nextID)", kind: kind, model: model, using: &rng)
        }
        var items = (0..<Int.random(in: 0...12, using: &rng)).map { _ in newItem(&rng) }
        let memo = WireSnapshotMemo()
        for _ in 0..<30 {
            switch items.isEmpty ? 1 : Int.random(in: 0..<9, using: &rng) {
            case 0: items[Int.random(in: 0..<items.count, using: &rng)] = newItem(&rng)  // changed (a new id)
            case 1: items.insert(newItem(&rng), at: Int.random(in: 0...items.count, using: &rng))
            case 2: items.remove(at: Int.random(in: 0..<items.count, using: &rng))
            case 3: items.shuffle(using: &rng)
            case 4:  // the same item spelled again: another key order or spacing, or another model
                let index = Int.random(in: 0..<items.count, using: &rng)
                let id = items[index].split(separator: "\"").drop { $0 != "id" }.dropFirst(2).first.map(String.init) ?? "i0"
                items[index] = Self.itemText(id: id, kind: "card", model: .random(using: &rng), using: &rng)
            case 5: items.append(items[Int.random(in: 0..<items.count, using: &rng)])  // a duplicate id
            case 6: items[Int.random(in: 0..<items.count, using: &rng)] = #"{"id":"bad id!","kind":"k"}"#
            case 7: items[Int.random(in: 0..<items.count, using: &rng)] = #"{"id":"nokind"}"#
            default: break  // the same document again
            }
            let bytes = Self.document(items, sections: Int.random(in: 1...3, using: &rng), using: &rng)
            let expected = Self.outcome(bytes, memo: nil)
            #expect(Self.outcome(bytes, memo: memo) == expected, "seed \(seed): \(String(decoding: bytes, as: UTF8.self))")
            if case .failure = expected { items.removeAll { $0.contains("bad id!") || $0.contains("nokind") } }
        }
    }

    /// An item whose bytes are the same is taken whole, escapes and unsorted keys included; the one that
    /// changed is read; the snapshot's models are those of the document, not the memo's.
    @Test func unchangedItemsAreTheSameAndChangedOnesAreRead() throws {
        let memo = WireSnapshotMemo()
        let first = Array(#"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"z":1,"a":"\u00e9"}},{"id":"b","kind":"k","model":{"n":1}}]}]}"#.utf8)
        let second = Array(#"{"sections":[{"id":"s","items":[{"id":"a","kind":"k","model":{"z":1,"a":"\u00e9"}},{"id":"b","kind":"k","model":{"n":2}}]}]}"#.utf8)
        _ = try WireCodec.decodeSnapshot(first, memo: memo)
        let snapshot = try WireCodec.decodeSnapshot(second, memo: memo)
        #expect(snapshot == (try WireCodec.decodeSnapshot(second)))
        #expect(snapshot.item(withID: "a")?.model.description == #"{"a":"é","z":1}"#)
        #expect(snapshot.item(withID: "b")?.model.description == #"{"n":2}"#)
        // The memo now describes the second document: the first again reads "b" as it is there.
        #expect(try WireCodec.decodeSnapshot(first, memo: memo).item(withID: "b")?.model.description == #"{"n":1}"#)
    }

    /// A document longer than the memo keeps is read whole and leaves no memo, and a forgotten memo
    /// (a deleted feed) reads the next document whole.
    @Test func aLongDocumentIsNotKept() throws {
        let memo = WireSnapshotMemo()
        let note = String(repeating: "x", count: 1000)
        let items = (0..<(WireSnapshotMemo.maximumDocumentBytes / 1000 + 1)).map { #"{"id":"i\#($0)","kind":"k","model":"\#(note)"}"# }
        let long = Array((#"{"sections":[{"id":"s","items":["# + items.joined(separator: ",") + "]}]}").utf8)
        #expect(long.count > WireSnapshotMemo.maximumDocumentBytes)
        #expect(try WireCodec.decodeSnapshot(long, memo: memo) == (try WireCodec.decodeSnapshot(long)))
        #expect(try WireCodec.decodeSnapshot(long, memo: memo).numberOfItems == items.count)
        memo.forget()
        #expect(try WireCodec.decodeSnapshot(long, memo: memo) == (try WireCodec.decodeSnapshot(long)))
    }
}
