import DiffStreamJSON

/// Several instances' presence of one feed as one list: what the presence feed shows under `--redis`.
///
/// A user with streams on several instances is one item (item ids are alike on every instance, under
/// the deployment's secret): its `connections` add up, its `metas` are put together (at most
/// ``PresenceTracker/maxMetasShown``), its `since` is the earliest. Users are listed by `since` (whole
/// seconds), then in the order their instances list them (each in join order), then by id: the first
/// `listed` of them. The count is the sum of the instances' counts less the users seen
/// on more than one: exact while each instance has at most `listed` users, else it may count a user
/// twice who is on two instances beyond their first `listed`.
public enum PresenceMerge {
    /// The merge of `shares` (presence snapshots), listing at most `listed` users.
    /// - Complexity: O(n log n) in the items of all shares.
    public static func merge(_ shares: [WireSnapshot], listed: Int) -> WireSnapshot {
        var count = 0
        var merged: [WireID: (item: WireItem, since: Double, rank: Int)] = [:]
        for share in shares {
            count += share.sections.first?.model["count"]?.numberValue.map { Int($0) } ?? 0
            for (rank, item) in PresenceSteps.items(of: share).enumerated() {
                let since = item.model["since"]?.numberValue ?? 0
                guard let held = merged[item.id] else {
                    merged[item.id] = (item, since, rank)
                    continue
                }
                count -= 1
                merged[item.id] = (combine(held.item, item), min(held.since, since), min(held.rank, rank))
            }
        }
        // `since` is in whole seconds: users who joined in the same second keep their instance's order.
        let ordered = merged.values.sorted {
            $0.since != $1.since ? $0.since < $1.since : $0.rank != $1.rank ? $0.rank < $1.rank : $0.item.id < $1.item.id
        }
        return PresenceTracker.snapshot(ordered.prefix(listed).map(\.item), count: count)
    }

    /// One user's items of two instances as one.
    private static func combine(_ a: WireItem, _ b: WireItem) -> WireItem {
        guard case .object(let first) = a.model.value, case .object(let second) = b.model.value else { return a }
        var fields: [(key: String, value: JSONValue)] = []
        for (key, value) in first {
            switch key {
            case "connections":
                fields.append((key, .number((value.numberValue ?? 0) + (second["connections"]?.numberValue ?? 0))))
            case "metas":
                let metas = (value.arrayValue ?? []) + (second["metas"]?.arrayValue ?? [])
                fields.append((key, .array(Array(metas.prefix(PresenceTracker.maxMetasShown)))))
            case "since":
                fields.append((key, .number(min(value.numberValue ?? 0, second["since"]?.numberValue ?? 0))))
            default:
                fields.append((key, value))
            }
        }
        return WireItem(id: a.id.string, kind: a.kind, model: .object(JSONObject(fields)))
    }
}
