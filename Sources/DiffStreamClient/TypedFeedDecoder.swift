import DiffStream
import DiffStreamJSON
import Foundation

/// Turns untyped updates of one feed into typed ones: items decode from the wire `{"id","kind","model"}`
/// and sections from `{"id","model"}` with the app's `Decodable` types.
///
/// An element that does not decode (an unknown kind, a model the type refuses, a typed id already taken)
/// is reported with its wire id and left out; its items are left out with a section that does not
/// decode. Decoded elements are kept by wire id and model, so a batch decodes only what it changed.
/// The typed operations are the difference between the previous and the new typed snapshot
/// (``DiffStream/Snapshot/diff(from:to:)``), so they always apply to the previous typed snapshot even
/// when elements were left out.
///
/// - Complexity: O(n) per update in the snapshot's size (a rebuild and a diff), plus decoding what changed.
struct TypedFeedDecoder<Section: Identifiable & Hashable & Decodable & Sendable, Item: Identifiable & Hashable & Decodable & Sendable>: Sendable
where Section.ID: Sendable, Item.ID: Sendable {
    private struct Decoded<Value: Sendable>: Sendable {
        var kind: String?
        var model: JSONModel
        var result: Result<Value, UndecodableElement>
    }

    private var sections: [WireID: Decoded<Section>] = [:]
    private var items: [WireID: Decoded<Item>] = [:]
    private var previous: Snapshot<Section, Item>?

    init() {}

    mutating func decode(_ update: WireFeedUpdate) -> FeedUpdate<Section, Item> {
        let decoder = JSONDecoder()
        var failures: [UndecodableElement] = []
        var typed = Snapshot<Section, Item>()
        var seenSections = Set<WireID>()
        var seenItems = Set<WireID>()
        let wire = update.snapshot
        for (index, wireSection) in wire.sections.enumerated() {
            seenSections.insert(wireSection.id)
            let section: Section
            switch decodeSection(wireSection, decoder: decoder, failures: &failures) {
            case .success(let value): section = value
            case .failure: continue
            }
            do { try typed.appendSections([section]) } catch {
                failures.append(UndecodableElement(id: wireSection.id.string, kind: nil, reason: error.description))
                continue
            }
            for wireItem in wire.items(atSectionIndex: index) {
                seenItems.insert(wireItem.id)
                guard case .success(let item) = decodeItem(wireItem, decoder: decoder, failures: &failures) else { continue }
                do { try typed.appendItems([item], toSection: section.id) } catch {
                    failures.append(UndecodableElement(id: wireItem.id.string, kind: wireItem.kind, reason: error.description))
                }
            }
        }
        sections = sections.filter { seenSections.contains($0.key) }
        items = items.filter { seenItems.contains($0.key) }
        var result = FeedUpdate(feed: update.feed, snapshot: typed, version: update.version, history: update.history, eventID: update.eventID,
                                change: update.change, undecodable: failures)
        if update.change == .batch, let previous {
            let batch = Snapshot.diff(from: previous, to: typed)
            result.operations = batch.operations
            result.changedItemIDs = batch.operations.compactMap { if case .update(let item) = $0 { item.id } else { nil } }
        }
        previous = typed
        return result
    }

    private mutating func decodeSection(_ wire: WireSection, decoder: JSONDecoder, failures: inout [UndecodableElement]) -> Result<Section, UndecodableElement> {
        if let cached = sections[wire.id], cached.model == wire.model { return cached.result }
        var writer = JSONWriter()
        writer.raw("{\"id\":")
        writer.write(wire.id)
        writer.raw(",\"model\":")
        writer.write(wire.model)
        writer.raw("}")
        let result: Result<Section, UndecodableElement>
        do {
            result = .success(try decoder.decode(Section.self, from: Data(writer.bytes)))
        } catch {
            let failure = UndecodableElement(id: wire.id.string, kind: nil, reason: Self.describe(error))
            failures.append(failure)
            result = .failure(failure)
        }
        sections[wire.id] = Decoded(kind: nil, model: wire.model, result: result)
        return result
    }

    private mutating func decodeItem(_ wire: WireItem, decoder: JSONDecoder, failures: inout [UndecodableElement]) -> Result<Item, UndecodableElement> {
        if let cached = items[wire.id], cached.model == wire.model, cached.kind == wire.kind { return cached.result }
        var writer = JSONWriter()
        WireCodec.writeItem(wire, into: &writer)
        let result: Result<Item, UndecodableElement>
        do {
            result = .success(try decoder.decode(Item.self, from: Data(writer.bytes)))
        } catch {
            let failure = UndecodableElement(id: wire.id.string, kind: wire.kind, reason: Self.describe(error))
            failures.append(failure)
            result = .failure(failure)
        }
        items[wire.id] = Decoded(kind: wire.kind, model: wire.model, result: result)
        return result
    }

    /// A decoding error in one line: the coding path and the reason.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
            return keys.isEmpty ? context.debugDescription : "\(keys): \(context.debugDescription)"
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): return path(context)
        case .keyNotFound(let key, let context): return path(context) + " (missing \(key.stringValue))"
        @unknown default: return "\(error)"
        }
    }
}
