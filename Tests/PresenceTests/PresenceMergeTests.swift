import DiffStreamJSON
import Presence
import Testing

struct PresenceMergeTests {
    static func item(_ id: String, since: Double, connections: Double = 1, metas: [JSONValue] = []) -> WireItem {
        WireItem(id: id, kind: PresenceTracker.itemKind, model: .object(JSONObject([
            ("connections", .number(connections)), ("metas", .array(metas)), ("since", .number(since)),
        ])))
    }

    static func models(_ snapshot: WireSnapshot) -> [String: JSONValue] {
        let items = snapshot.sections.first.flatMap { snapshot.items(inSection: $0.id) } ?? []
        return Dictionary(uniqueKeysWithValues: items.map { ($0.id.string, $0.model.value) })
    }

    @Test func oneUserOnTwoInstancesIsOneItemAndCountsOnce() {
        let a = PresenceTracker.snapshot([Self.item("alice", since: 10, metas: [.string("a")]), Self.item("bob", since: 12)], count: 2)
        let b = PresenceTracker.snapshot([Self.item("alice", since: 11, connections: 2, metas: [.string("b")])], count: 1)
        let merged = PresenceMerge.merge([a, b], listed: 100)
        #expect(merged.sections.first?.model["count"]?.numberValue == 2)
        let alice = Self.models(merged)["alice"]
        #expect(alice?["connections"]?.numberValue == 3 && alice?["since"]?.numberValue == 10)
        #expect(alice?["metas"] == .array([.string("a"), .string("b")]))
    }

    @Test func usersAreListedBySinceUpToTheThreshold() {
        let a = PresenceTracker.snapshot([Self.item("x", since: 3), Self.item("y", since: 1)], count: 5)
        let b = PresenceTracker.snapshot([Self.item("z", since: 2)], count: 4)
        let merged = PresenceMerge.merge([a, b], listed: 2)
        let ids = merged.sections.first.flatMap { merged.items(inSection: $0.id) }?.map(\.id.string)
        #expect(ids == ["y", "z"])
        #expect(merged.sections.first?.model == JSONModel(.object(JSONObject([("count", .number(9)), ("listed", .number(2))]))))
    }
}
