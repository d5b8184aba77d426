import DiffStream
import DiffStreamJSON

/// The snapshots that take a presence feed from one list to another in batches of at most a given
/// size: removals first, then the items to put (updates and insertions, in the new order).
public enum PresenceSteps {
    /// The snapshots to write, in order, from `old` to `new` (none when they are equal); each differs
    /// from the one before by a batch of at most about `batchBytes` (less a margin of 1 KiB for the
    /// event's own fields and the section's model). The last one is `new`.
    /// - Complexity: O(items × steps).
    public static func between(_ old: WireSnapshot, _ new: WireSnapshot, batchBytes: Int) -> [WireSnapshot] {
        guard WireCodec.encode(old) != WireCodec.encode(new) else { return [] }
        let oldItems = items(of: old), newItems = items(of: new)
        let count = new.sections.first?.model["count"]?.numberValue.map { Int($0) } ?? newItems.count
        let newIDs = Set(newItems.map(\.id))
        var current = Dictionary(uniqueKeysWithValues: oldItems.map { ($0.id, $0) })
        enum Change { case remove(WireID), put(WireItem) }
        var changes: [(change: Change, cost: Int)] = oldItems.filter { !newIDs.contains($0.id) }.map { (.remove($0.id), $0.id.string.utf8.count + 40) }
        var removals = changes.count
        for item in newItems where current[item.id] != item { changes.append((.put(item), cost(item))) }
        let budget = max(batchBytes - 1024, 1)
        var steps: [WireSnapshot] = []
        var spent = 0
        func step() {
            // While removals remain, the old order; after them every item held is in the new list.
            let listed = removals > 0 ? oldItems.compactMap { current[$0.id] } : newItems.compactMap { current[$0.id] }
            steps.append(PresenceTracker.snapshot(listed, count: count))
        }
        for (change, cost) in changes {
            if spent > 0 && spent + cost > budget {
                step()
                spent = 0
            }
            switch change {
            case .remove(let id):
                current[id] = nil
                removals -= 1
            case .put(let item):
                current[item.id] = item
            }
            spent += cost
        }
        steps.append(new)
        return steps
    }

    /// The items of a presence snapshot, in order.
    static func items(of snapshot: WireSnapshot) -> [WireItem] {
        snapshot.sections.first.flatMap { snapshot.items(inSection: $0.id) } ?? []
    }

    /// What putting `item` costs a batch at most: the item as the wire writes it, and an insert's
    /// framing (`{"op":"insert","item":…,"section":"present","before":"<id>"},`).
    static func cost(_ item: WireItem) -> Int {
        var writer = JSONWriter()
        WireCodec.writeItem(item, into: &writer)
        return writer.bytes.count + 2 * item.id.string.utf8.count + 96
    }
}
