import DiffStream
import DiffStreamJSON
import Testing
import TestSupport

/// Seeded random event data against the tree reader (`Oracle`, in WireEventDataTests.swift); every
/// failure names its seed.
struct WireEventDataPropertyTests {
    /// Random batches and snapshots with every operation, spelled many ways (members in any order,
    /// escapes, whitespace, unknown members), some with one fault: the one-pass reader gives what the
    /// tree reader gives (models rounded alike), the same error for refused data, and models exactly as
    /// written (their canonical text, computed independently by `ExactValue`).
    @Test(arguments: 0..<6)
    func randomDataReadsAsTheTreeReadsIt(batch: Int) throws {
        var outcomes = (accepted: 0, refused: 0)
        for round in 0..<200 {
            let seed = UInt64(batch * 1000 + round)
            var generator = EventDataGenerator(seed: seed)
            let faulty = round % 3 == 0
            let content: WireEventData.Content = round % 4 == 1 ? .snapshot : .batch
            let (text, models) = content == .snapshot ? generator.snapshotData(faulty: faulty) : generator.batchData(faulty: faulty)
            let bytes = Array(text.utf8)
            for reading in [content, .none] {
                let ours = Result { () throws(WireError) in try WireCodec.decodeEventData(bytes, carrying: reading) }
                #expect(Oracle.lossy(ours) == Oracle.read(bytes, reading), "seed \(seed), \(reading): \(text)")
                if reading == content, case .success(let data) = ours, case .success = data.body { outcomes.accepted += 1 } else if reading == content { outcomes.refused += 1 }
            }
            guard !faulty else { continue }
            let data = try WireCodec.decodeEventData(bytes, carrying: content)
            #expect(Self.models(data) == models, "seed \(seed): \(text)")
        }
        // Both paths are taken: most data is read, faulty data often refused.
        #expect(outcomes.accepted > 120 && outcomes.refused > 20, "\(outcomes)")
    }

    /// Random bytes and mutations of valid data never crash the reader; for each content, it accepts
    /// what the tree reader accepts, with the same result, and refuses the rest with the same error.
    @Test(arguments: 0..<4)
    func randomAndMutatedBytesReadAsTheTreeReadsThem(batch: Int) {
        let valid = Array(#"{"feed":"f","history":"h","from":1,"version":2,"ops":[{"op":"insert","item":{"id":"a","kind":"k","model":{"t":"é\n","n":[1.5e3,-0,true,null,1e400]}},"section":"s","before":null},{"op":"update","item":"a","kind":"k","model":{"b":1,"a":"\ud83d\ude00"}},{"op":"insertSection","section":{"id":"t","model":1},"before":"s"},{"op":"move","item":"a","section":"t"}],"sections":[{"id":"s","model":2,"items":[{"id":"a","kind":"k"}]}]}"#.utf8)
        for round in 0..<400 {
            let seed = UInt64(batch * 10000 + round)
            var rng = SeededGenerator(seed: seed)
            let bytes = JSONFuzzInput.make(round: round, valid: valid, randomEvery: 4, maxMutations: 3, using: &rng)
            for content in [WireEventData.Content.batch, .snapshot, .none] {
                let ours = Result { () throws(WireError) in try WireCodec.decodeEventData(bytes, carrying: content) }
                #expect(Oracle.lossy(ours) == Oracle.read(bytes, content), "seed \(seed), \(content): \(String(decoding: bytes, as: UTF8.self))")
            }
        }
    }

    /// The canonical text of each model the data keeps, in document order.
    static func models(_ data: WireEventData) -> [String] {
        switch data.body {
        case .success(.batch(let batch)):
            batch.operations.compactMap { operation in
                switch operation {
                case .insertSection(let section, _), .updateSection(let section): section.model.description
                case .insert(let item, _, _), .update(let item): item.model.description
                default: nil
                }
            }
        case .success(.snapshot(let snapshot)):
            snapshot.sections.indices.flatMap { index in
                [snapshot.sections[index].model.description] + snapshot.items(atSectionIndex: index).map(\.model.description)
            }
        default: []
        }
    }
}

/// Writes random event data, and the canonical text of the models it holds.
struct EventDataGenerator {
    var rng: SeededGenerator
    init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    static let ids = ["a", "b", "s1", "é", "e\u{301}", "😀", "\"q\"", "x/y", "t"]
    static let wrongValues = ["1", "true", "null", "[]", "{}", "\"\"", "\"\(String(repeating: "x", count: 257))\"", "\"nope\"", "-0.5e1"]

    mutating func space() -> String { ["", "", "", " ", "\n", "\t "].randomElement(using: &rng)! }
    mutating func quote(_ string: String) -> String { ExactValue.quote(Array(string.unicodeScalars), using: &rng) }
    mutating func id() -> String { quote(Self.ids.randomElement(using: &rng)!) }
    mutating func chance(_ n: Int) -> Bool { Int.random(in: 0..<n, using: &rng) == 0 }

    mutating func model() -> (text: String, canonical: String) {
        let value = ExactValue.random(using: &rng)
        return (value.randomText(using: &rng), value.canonical)
    }

    /// An object of these members in a random order, each key spelled with random escapes.
    mutating func object(_ members: [(key: String, value: String)]) -> String {
        var parts: [String] = []
        for member in members.shuffled(using: &rng) {
            parts.append(quote(member.key) + space() + ":" + space() + member.value)
        }
        return "{" + space() + parts.joined(separator: space() + "," + space()) + space() + "}"
    }

    /// Adds an anchor (`before`) or not.
    mutating func anchor(to members: inout [(key: String, value: String)]) {
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: break
        case 1: members.append(("before", "null"))
        default: members.append(("before", id()))
        }
    }

    /// One fault in these members: one left out, given a value of another type, or `op` unknown.
    mutating func fault(_ members: inout [(key: String, value: String)]) {
        guard !members.isEmpty else { return }
        let index = Int.random(in: 0..<members.count, using: &rng)
        if chance(3) {
            members.remove(at: index)
        } else {
            members[index].value = Self.wrongValues.randomElement(using: &rng)!
        }
    }

    /// The envelope every event has, with values of other types now and then.
    mutating func envelope(batch: Bool) -> [(key: String, value: String)] {
        var members: [(key: String, value: String)] = [("feed", quote("home")), ("version", ["8", "8.0", "80e-1", "\"8\"", "8.5"].randomElement(using: &rng)!)]
        if batch { members.append(("from", ["7", "7E0", "-0", "1e400"].randomElement(using: &rng)!)) }
        if !chance(4) { members.append(("history", quote("9f86d081884c7d65"))) }
        if chance(4) { members.append(("other", ExactValue.random(using: &rng).randomText(using: &rng))) }
        return members
    }

    /// Batch data: `{"feed","history","from","version","ops":[…]}`.
    mutating func batchData(faulty: Bool) -> (text: String, models: [String]) {
        var operations: [String] = []
        var models: [String] = []
        let count = Int.random(in: 0...6, using: &rng)
        let faultAt = faulty ? Int.random(in: -1..<max(count, 1), using: &rng) : -2
        for index in 0..<count {
            let kind = OperationKind.allCases.randomElement(using: &rng)!
            var members: [(key: String, value: String)] = [("op", quote(kind.rawValue))]
            switch kind {
            case .deleteSection: members.append(("section", id()))
            case .moveSection:
                members.append(("section", id()))
                anchor(to: &members)
            case .delete: members.append(("item", id()))
            case .move:
                members += [("item", id()), ("section", id())]
                anchor(to: &members)
            case .insertSection:
                var section: [(key: String, value: String)] = [("id", id())]
                if chance(4) { section.append(("kind", Self.wrongValues.randomElement(using: &rng)!)) }  // ignored in a section
                models.append(modelMember(into: &section))
                if index == faultAt && chance(2) { fault(&section) }
                members.append(("section", object(section)))
                anchor(to: &members)
            case .insert:
                var item: [(key: String, value: String)] = [("id", id()), ("kind", quote(["card", "row", "é"].randomElement(using: &rng)!))]
                models.append(modelMember(into: &item))
                if chance(4) { item.append(("x", ExactValue.random(using: &rng).randomText(using: &rng))) }
                if index == faultAt && chance(2) { fault(&item) }
                members += [("item", object(item)), ("section", id())]
                anchor(to: &members)
            case .updateSection:
                members.append(("section", id()))
                models.append(modelMember(into: &members))
            case .update:
                members += [("item", id()), ("kind", quote("card"))]
                models.append(modelMember(into: &members))
                if chance(4) { members.append(("id", id())) }  // replaced by `item`
            }
            if ![.update, .updateSection].contains(kind) && chance(4) { members.append(("model", model().text)) }  // ignored
            if chance(5) { members.append(("extra", ExactValue.random(using: &rng).randomText(using: &rng))) }
            if index == faultAt { fault(&members) }
            operations.append(object(members))
        }
        var members = envelope(batch: true)
        members.append(("ops", "[" + space() + operations.joined(separator: space() + "," + space()) + space() + "]"))
        if faultAt == -1 { fault(&members) }
        return (space() + object(members) + space(), models)
    }

    /// Snapshot data: `{"feed","history","version","sections":[…]}`.
    mutating func snapshotData(faulty: Bool) -> (text: String, models: [String]) {
        var sections: [String] = []
        var models: [String] = []
        var used = Set<String>()
        for _ in 0..<Int.random(in: 0...3, using: &rng) {
            var section: [(key: String, value: String)] = [("id", uniqueID(&used))]
            models.append(modelMember(into: &section))
            var items: [String] = []
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                var item: [(key: String, value: String)] = [("id", uniqueID(&used)), ("kind", quote("card"))]
                models.append(modelMember(into: &item))
                items.append(object(item))
            }
            if !items.isEmpty || chance(2) { section.append(("items", "[" + items.joined(separator: ",") + "]")) }
            if faulty && chance(2) { fault(&section) }
            sections.append(object(section))
        }
        var members = envelope(batch: false)
        members.append(("sections", "[" + sections.joined(separator: "," + space()) + "]"))
        if faulty && chance(2) { fault(&members) }
        return (object(members), models)
    }

    /// A model member, or none (`null`); the model's canonical text.
    mutating func modelMember(into members: inout [(key: String, value: String)]) -> String {
        guard !chance(4) else { return "null" }
        let model = model()
        members.append(("model", model.text))
        return model.canonical
    }

    /// An id no earlier call returned (ids of a snapshot are unique), spelled with random escapes.
    mutating func uniqueID(_ used: inout Set<String>) -> String {
        var id = Self.ids.randomElement(using: &rng)!
        while used.contains(id) { id += "\(used.count)" }
        used.insert(id)
        return quote(id)
    }
}
