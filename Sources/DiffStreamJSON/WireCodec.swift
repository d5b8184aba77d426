import DiffStream
import JSONEscaping

/// Reads and writes snapshots and operations in the wire format:
/// `{"sections":[{"id":"S","model":…,"items":[{"id":"I","kind":"k","model":…}]}]}` and
/// `{"op":"insert","item":{…},"section":"S","before":"J"|null}` and so on.
///
/// Writing goes straight to bytes with ``JSONWriter`` (one line of JSON, as an SSE `data:` field needs);
/// reading validates shape and ids and names the path of the first problem.
public enum WireCodec {
    // MARK: Writing

    /// Writes `"sections":[…]` (without braces) for a snapshot.
    public static func writeSections(_ snapshot: WireSnapshot, into writer: inout JSONWriter) {
        writer.key("sections")
        writer.byte(UInt8(ascii: "["))
        for (index, section) in snapshot.sections.enumerated() {
            if index > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.raw("{\"id\":")
            writer.write(section.id)
            writer.raw(",\"model\":")
            writer.write(section.model)
            writer.raw(",\"items\":[")
            for (itemIndex, item) in snapshot.items(atSectionIndex: index).enumerated() {
                if itemIndex > 0 { writer.byte(UInt8(ascii: ",")) }
                writeItem(item, into: &writer)
            }
            writer.raw("]}")
        }
        writer.byte(UInt8(ascii: "]"))
    }

    /// The snapshot as a JSON document `{"sections":[…]}`.
    public static func encode(_ snapshot: WireSnapshot) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + snapshot.numberOfItems * 64)
        writer.byte(UInt8(ascii: "{"))
        writeSections(snapshot, into: &writer)
        writer.byte(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// The length of ``encode(_:)``'s bytes, counted without writing them: what a feed kept only in
    /// memory needs of its snapshot's encoding (its size, for the storage account).
    /// - Complexity: O(length of the ids and kinds, and the number of items); a model counts by its
    ///   stored length.
    public static func encodedCount(_ snapshot: WireSnapshot) -> Int {
        let sections = snapshot.sections
        // {"sections":[ … ]} and the commas between sections
        var count = 15 + max(0, sections.count - 1)
        for (index, section) in sections.enumerated() {
            // {"id": ,"model": ,"items":[ ]} around the section's id and model
            count += 27 + JSONStringEscaping.count(section.id.string) + section.model.bytes.count
            let items = snapshot.items(atSectionIndex: index)
            count += max(0, items.count - 1)
            // Read in place: copying each item out would retain and release its three buffers.
            items.withUnsafeBufferPointer { items in
                for index in items.indices {
                    // {"id": ,"kind": ,"model": } around the item's id, kind and model
                    count += 24 + JSONStringEscaping.count(items[index].id.string) + JSONStringEscaping.count(items[index].kind)
                        + items[index].model.bytes.count
                }
            }
        }
        return count
    }

    /// Writes `{"id":…,"kind":…,"model":…}`.
    public static func writeItem(_ item: WireItem, into writer: inout JSONWriter) {
        writer.raw("{\"id\":")
        writer.write(item.id)
        writer.raw(",\"kind\":")
        writer.write(item.kind)
        writer.raw(",\"model\":")
        writer.write(item.model)
        writer.byte(UInt8(ascii: "}"))
    }

    /// Writes `[op,op,…]`.
    public static func writeOperations(_ operations: [WireOperation], into writer: inout JSONWriter) {
        writer.byte(UInt8(ascii: "["))
        for (index, operation) in operations.enumerated() {
            if index > 0 { writer.byte(UInt8(ascii: ",")) }
            writeOperation(operation, into: &writer)
        }
        writer.byte(UInt8(ascii: "]"))
    }

    /// Writes one operation object.
    public static func writeOperation(_ operation: WireOperation, into writer: inout JSONWriter) {
        func anchor(_ id: WireID?) {
            writer.raw(",\"before\":")
            if let id { writer.write(id) } else { writer.raw("null") }
        }
        switch operation {
        case .deleteSection(let id):
            writer.raw("{\"op\":\"deleteSection\",\"section\":")
            writer.write(id)
        case .insertSection(let section, let before):
            writer.raw("{\"op\":\"insertSection\",\"section\":{\"id\":")
            writer.write(section.id)
            writer.raw(",\"model\":")
            writer.write(section.model)
            writer.byte(UInt8(ascii: "}"))
            anchor(before)
        case .moveSection(let id, let before):
            writer.raw("{\"op\":\"moveSection\",\"section\":")
            writer.write(id)
            anchor(before)
        case .updateSection(let section):
            writer.raw("{\"op\":\"updateSection\",\"section\":")
            writer.write(section.id)
            writer.raw(",\"model\":")
            writer.write(section.model)
        case .delete(let id):
            writer.raw("{\"op\":\"delete\",\"item\":")
            writer.write(id)
        case .insert(let item, let section, let before):
            writer.raw("{\"op\":\"insert\",\"item\":")
            writeItem(item, into: &writer)
            writer.raw(",\"section\":")
            writer.write(section)
            anchor(before)
        case .move(let id, let section, let before):
            writer.raw("{\"op\":\"move\",\"item\":")
            writer.write(id)
            writer.raw(",\"section\":")
            writer.write(section)
            anchor(before)
        case .update(let item):
            writer.raw("{\"op\":\"update\",\"item\":")
            writer.write(item.id)
            writer.raw(",\"kind\":")
            writer.write(item.kind)
            writer.raw(",\"model\":")
            writer.write(item.model)
        }
        writer.byte(UInt8(ascii: "}"))
    }

    // MARK: Reading

    /// Reads a snapshot document from bytes: one pass straight into the snapshot, models kept as
    /// canonical JSON (``JSONModel``), no JSON tree. Malformed JSON anywhere is reported before a shape
    /// problem; of several shape problems, the first in document order is reported.
    /// - Complexity: O(n) in the document's length (plus sorting the keys of model objects that are
    ///   not in canonical order).
    public static func decodeSnapshot(_ bytes: some Collection<UInt8>) throws(WireError) -> WireSnapshot {
        try decodeSnapshot(bytes, memo: nil)
    }

    /// ``decodeSnapshot(_:)-(some Collection<UInt8>)`` for the next document of a feed whose last one
    /// `memo` keeps: the items whose bytes did not change are taken from it, not read again, and the
    /// memo then keeps this document (``WireSnapshotMemo``). The snapshot and the errors are the same
    /// as without a memo.
    /// - Complexity: O(n) in the document's length: a byte comparison for each item that did not change.
    public static func decodeSnapshot(_ bytes: some Collection<UInt8>, memo: WireSnapshotMemo?) throws(WireError) -> WireSnapshot {
        var failure: WireError?
        let previous = memo?.entry
        let result: (WireSnapshot, WireSnapshotMemo.Entry?)?? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(WireError) { return try WireSnapshotReader.read(buffer, memo: previous, remembering: memo != nil) } catch { failure = error; return nil }
        }
        var read: (WireSnapshot, WireSnapshotMemo.Entry?)?
        if let result {
            read = result
        } else {
            do { read = try Array(bytes).withUnsafeBufferPointer { (buffer) throws(WireError) in try WireSnapshotReader.read(buffer, memo: previous, remembering: memo != nil) } }
            catch { failure = error }
        }
        if let (snapshot, entry) = read {
            memo?.remember(entry)
            return snapshot
        }
        guard let failure else { throw .shape(path: "$", expected: "a snapshot document") }
        switch failure {
        case .shape, .invalidID:
            // Read again as a tree for the first problem in document order (rare: only refused documents).
            let value: JSONValue
            do { value = try JSONParser.parse(bytes, numbersBeyondDouble: .infinity) } catch { throw .malformed(error) }
            _ = try decodeSnapshot(value)
            throw failure
        default:
            throw failure
        }
    }

    /// Reads the data of an event of the event stream from bytes: one pass straight into its members
    /// (`feed`, `history`, `from`, `version`, `error`, `detail`) and the body `content` names (a
    /// snapshot's `sections`, a batch's `ops`), models kept as canonical JSON, no JSON tree.
    ///
    /// Malformed JSON anywhere is thrown (``WireError/malformed(_:)``, with the offset ``JSONParser``
    /// reports). A body of the wrong shape is not thrown but kept in ``WireEventData/body``, with the
    /// members read, so that a caller can check the members first; of several shape problems, the
    /// first in document order is kept (the data is then read again as a tree: only refused data is).
    /// - Complexity: O(n) in the data's length (plus sorting the keys of model objects that are not in
    ///   canonical order).
    public static func decodeEventData(_ bytes: some Collection<UInt8>, carrying content: WireEventData.Content) throws(WireError) -> WireEventData {
        var failure: WireError?
        let result: WireEventData?? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(WireError) { return try WireSnapshotReader.readEvent(buffer, carrying: content) } catch { failure = error; return nil }
        }
        if let result {
            if let data = result { return data }
        } else {
            do { return try Array(bytes).withUnsafeBufferPointer { (buffer) throws(WireError) in try WireSnapshotReader.readEvent(buffer, carrying: content) } }
            catch { failure = error }
        }
        // Refused (rare): read again as a tree, for malformed JSON anywhere first, then the members and
        // the first shape problem in document order.
        let value: JSONValue
        do { value = try JSONParser.parse(bytes, numbersBeyondDouble: .infinity) } catch { throw .malformed(error) }
        let refusal = failure ?? .shape(path: "$", expected: "an event's data")
        switch content {
        case .snapshot:
            do { _ = try decodeSnapshot(value) } catch { return WireEventData(members: value, body: .failure(error)) }
        case .batch:
            do { _ = try decodeOperations(value["ops"] ?? .null) } catch { return WireEventData(members: value, body: .failure(error)) }
        case .none:
            return WireEventData(members: value, body: .success(.none))
        }
        return WireEventData(members: value, body: .failure(refusal))
    }

    /// Reads a snapshot document `{"sections":[…]}` from a parsed value.
    public static func decodeSnapshot(_ value: JSONValue) throws(WireError) -> WireSnapshot {
        guard case .object(let root) = value else { throw .shape(path: "$", expected: "an object with \"sections\"") }
        guard case .array(let sections)? = root["sections"] else { throw .shape(path: "sections", expected: "an array") }
        var built: [Section<WireSection, WireItem>] = []
        built.reserveCapacity(sections.count)
        for (index, sectionValue) in sections.enumerated() {
            let path = "sections[\(index)]"
            let section = try decodeSection(sectionValue, path: path)
            var items: [WireItem] = []
            switch sectionValue["items"] {
            case nil, .null?: break
            case .array(let itemValues)?:
                items.reserveCapacity(itemValues.count)
                for (itemIndex, itemValue) in itemValues.enumerated() {
                    items.append(try decodeItem(itemValue, path: "\(path).items[\(itemIndex)]"))
                }
            default: throw .shape(path: "\(path).items", expected: "an array")
            }
            built.append(Section(section, items: items))
        }
        do { return try WireSnapshot(sections: built) } catch { throw .snapshot(error) }
    }

    /// Reads `{"id":…,"model":…}`.
    public static func decodeSection(_ value: JSONValue, path: String) throws(WireError) -> WireSection {
        guard case .object(let object) = value else { throw .shape(path: path, expected: "an object") }
        let id = try decodeID(object["id"], path: "\(path).id")
        return WireSection(id: id, model: JSONModel(object["model"] ?? .null))
    }

    /// Reads `{"id":…,"kind":…,"model":…}`.
    public static func decodeItem(_ value: JSONValue, path: String) throws(WireError) -> WireItem {
        guard case .object(let object) = value else { throw .shape(path: path, expected: "an object") }
        let id = try decodeID(object["id"], path: "\(path).id")
        guard case .string(let kind)? = object["kind"], !kind.isEmpty, kind.utf8.count <= WireID.maximumLength else {
            throw .shape(path: "\(path).kind", expected: "a non-empty string")
        }
        return WireItem(id: id, kind: kind, model: JSONModel(object["model"] ?? .null))
    }

    static func decodeID(_ value: JSONValue?, path: String) throws(WireError) -> WireID {
        guard case .string(let id)? = value else { throw .shape(path: path, expected: "a string") }
        guard WireID.isValid(id) else { throw .invalidID(path: path, id: id) }
        return WireID(id)
    }

    static func decodeAnchor(_ value: JSONValue?, path: String) throws(WireError) -> WireID? {
        switch value {
        case nil, .null?: return nil
        default: return try decodeID(value, path: path)
        }
    }

    /// Reads one operation object.
    public static func decodeOperation(_ value: JSONValue, path: String = "op") throws(WireError) -> WireOperation {
        guard case .object(let object) = value, case .string(let name)? = object["op"],
              let kind = OperationKind(rawValue: name)
        else { throw .shape(path: path, expected: "an operation object with a known \"op\"") }
        switch kind {
        case .deleteSection:
            return .deleteSection(try decodeID(object["section"], path: "\(path).section"))
        case .insertSection:
            return .insertSection(
                try decodeSection(object["section"] ?? .null, path: "\(path).section"),
                before: try decodeAnchor(object["before"], path: "\(path).before"))
        case .moveSection:
            return .moveSection(
                try decodeID(object["section"], path: "\(path).section"),
                before: try decodeAnchor(object["before"], path: "\(path).before"))
        case .updateSection:
            let id = try decodeID(object["section"], path: "\(path).section")
            return .updateSection(WireSection(id: id, model: JSONModel(object["model"] ?? .null)))
        case .delete:
            return .delete(try decodeID(object["item"], path: "\(path).item"))
        case .insert:
            return .insert(
                try decodeItem(object["item"] ?? .null, path: "\(path).item"),
                section: try decodeID(object["section"], path: "\(path).section"),
                before: try decodeAnchor(object["before"], path: "\(path).before"))
        case .move:
            return .move(
                try decodeID(object["item"], path: "\(path).item"),
                section: try decodeID(object["section"], path: "\(path).section"),
                before: try decodeAnchor(object["before"], path: "\(path).before"))
        case .update:
            var withID = object
            withID["id"] = object["item"]
            return .update(try decodeItem(.object(withID), path: path))
        }
    }

    /// Reads an array of operations.
    public static func decodeOperations(_ value: JSONValue) throws(WireError) -> WireBatch {
        guard case .array(let elements) = value else { throw .shape(path: "ops", expected: "an array") }
        var operations: [WireOperation] = []
        operations.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            operations.append(try decodeOperation(element, path: "ops[\(index)]"))
        }
        return WireBatch(operations)
    }
}
