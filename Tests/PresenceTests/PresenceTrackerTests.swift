import DiffStream
import DiffStreamJSON
import Presence
import Testing
import TestSupport

struct PresenceTrackerTests {
    static let ids = PresenceItemIDs(secret: Array("a secret of the tests, 32 bytes!".utf8))

    static func tracker(_ settings: PresenceTracker.Settings = PresenceTracker.Settings(interval: 1, grace: 5)) -> PresenceTracker {
        PresenceTracker(feed: "board", settings: settings, ids: ids)
    }

    static func alice(_ meta: String? = nil, hidden: Bool = false) -> PresenceConnection {
        PresenceConnection(user: .identified(subject: "alice@example.com", name: "Alice"), meta: meta.map { try! JSONModel(parsing: $0) }, hidden: hidden)
    }

    static func bob() -> PresenceConnection { PresenceConnection(user: .identified(subject: "bob@example.com", name: "Bob")) }

    /// The listed items' models, in order, and the section's count.
    static func shown(_ snapshot: WireSnapshot) -> (items: [JSONValue], count: Double?) {
        let section = snapshot.sections.first
        let items = section.map { snapshot.items(inSection: $0.id) ?? [] } ?? []
        return (items.map(\.model.value), section?.model["count"]?.numberValue)
    }

    @Test func aUserJoinsWithTheirFirstConnectionAndTheFirstChangeIsWrittenAtOnce() {
        var tracker = Self.tracker()
        tracker.open(1, Self.alice(), now: 10, wall: 1_000)
        let steps = tracker.advance(now: 10)
        #expect(steps.count == 1)
        let (items, count) = Self.shown(steps[0])
        #expect(count == 1)
        #expect(items.first?["connections"]?.numberValue == 1)
        #expect(items.first?["since"]?.numberValue == 1_000)
        #expect(items.first?["name"] == nil)  // identities are off
        #expect(tracker.snapshot.sections.first?.model["listed"]?.numberValue == 1)
    }

    @Test func severalConnectionsOfOneUserAreOneItemWithACount() {
        var tracker = Self.tracker()
        tracker.open(1, Self.alice(#"{"device":"phone"}"#), now: 0, wall: 0)
        tracker.open(2, Self.alice(#"{"device":"laptop"}"#), now: 0, wall: 0)
        let (items, count) = Self.shown(tracker.advance(now: 0).last!)
        #expect(count == 1 && items.count == 1)
        #expect(items[0]["connections"]?.numberValue == 2)
        #expect(items[0]["metas"] == .array([.object(JSONObject([("device", .string("phone"))])), .object(JSONObject([("device", .string("laptop"))]))]))
    }

    @Test func aReopenWithinTheGraceIsNeitherLeaveNorJoin() {
        var tracker = Self.tracker()
        tracker.open(1, Self.alice(), now: 0, wall: 0)
        let first = tracker.advance(now: 0)
        tracker.close(1, now: 2)
        #expect(tracker.advance(now: 3).isEmpty)  // still there, as shown
        tracker.open(2, Self.alice(), now: 4, wall: 4)
        #expect(tracker.advance(now: 5).isEmpty)  // nothing changed on the wire
        #expect(WireCodec.encode(tracker.snapshot) == WireCodec.encode(first[0]))
        #expect(tracker.nextDeadline == nil)
    }

    @Test func aUserLeavesOnceTheGraceHasPassedAfterTheirLastConnectionClosed() {
        var tracker = Self.tracker()
        tracker.open(1, Self.alice(), now: 0, wall: 0)
        _ = tracker.advance(now: 0)
        tracker.close(1, now: 2)
        #expect(tracker.nextDeadline == 7)
        #expect(tracker.advance(now: 6.9).isEmpty)
        let steps = tracker.advance(now: 7)
        #expect(Self.shown(steps[0]).count == 0 && Self.shown(steps[0]).items.isEmpty)
        #expect(tracker.isIdle)
    }

    @Test func anonymousConnectionsAreOneUserOnlyWhenTheyCarryTheSameID() {
        var tracker = Self.tracker()
        tracker.open(1, PresenceConnection(user: .anonymous(carried: "tab-id-1")), now: 0, wall: 0)
        tracker.open(2, PresenceConnection(user: .anonymous(carried: "tab-id-1")), now: 0, wall: 0)
        tracker.open(3, PresenceConnection(user: .anonymous(carried: nil)), now: 0, wall: 0)
        tracker.open(4, PresenceConnection(user: .anonymous(carried: nil)), now: 0, wall: 0)
        #expect(Self.shown(tracker.advance(now: 0).last!).count == 3)
    }

    @Test func changesAreCoalescedToTheirNetChangeOncePerInterval() {
        var tracker = Self.tracker(PresenceTracker.Settings(interval: 1, grace: 0))
        tracker.open(1, Self.alice(), now: 0, wall: 0)
        #expect(tracker.advance(now: 0).count == 1)
        tracker.open(2, Self.bob(), now: 0.1, wall: 0)
        tracker.close(2, now: 0.2)
        #expect(tracker.advance(now: 0.5).isEmpty)  // within the interval
        #expect(tracker.nextDeadline == 1)
        #expect(tracker.advance(now: 1).isEmpty)  // Bob came and went: no net change
        tracker.open(3, Self.bob(), now: 1.2, wall: 0)
        #expect(tracker.advance(now: 1.5).isEmpty)
        #expect(Self.shown(tracker.advance(now: 2).last!).count == 2)
    }

    @Test func pastTheThresholdTheFirstUsersInJoinOrderAreListedWithTheCount() {
        var tracker = Self.tracker(PresenceTracker.Settings(interval: 0, grace: 0, listed: 3))
        for user in 1...5 { tracker.open(user, PresenceConnection(user: .identified(subject: "u\(user)", name: nil)), now: Double(user), wall: Double(user)) }
        let shown = Self.shown(tracker.advance(now: 5).last!)
        #expect(shown.count == 5)
        #expect(shown.items.compactMap { $0["since"]?.numberValue } == [1, 2, 3])
        #expect(tracker.snapshot.sections.first?.model["listed"]?.numberValue == 3)
        tracker.close(2, now: 6)
        let after = Self.shown(tracker.advance(now: 6).last!)
        #expect(after.count == 4)
        #expect(after.items.compactMap { $0["since"]?.numberValue } == [1, 3, 4])
    }

    @Test func aChangeOverTheBatchBudgetIsWrittenInStepsEachWithinIt() {
        let budget = 4 * 1024
        var tracker = Self.tracker(PresenceTracker.Settings(interval: 1, grace: 0, listed: 100, batchBytes: budget, identities: true))
        let meta = #"{"status":"\#(String(repeating: "x", count: 100))"}"#
        for user in 1...100 {
            tracker.open(user, PresenceConnection(user: .identified(subject: "user-\(user)@example.com", name: "User \(user)"), meta: try! JSONModel(parsing: meta)), now: 0, wall: 0)
        }
        var previous = WireSnapshot()
        let steps = tracker.advance(now: 0)
        #expect(steps.count > 1)
        for step in steps {
            var writer = JSONWriter()
            WireCodec.writeOperations(WireSnapshot.diff(from: previous, to: step).operations, into: &writer)
            #expect(writer.bytes.count <= budget)
            previous = step
        }
        #expect(Self.shown(previous).items.count == 100)
    }

    @Test(arguments: [false, true])
    func itemIDsDoNotRevealTheSubjectAndNamesShowOnlyWithIdentities(identities: Bool) {
        var tracker = Self.tracker(PresenceTracker.Settings(identities: identities))
        tracker.open(1, Self.alice(), now: 0, wall: 0)
        let snapshot = tracker.advance(now: 0)[0]
        let item = snapshot.items(inSection: WireID(PresenceTracker.sectionID))![0]
        #expect(!item.id.string.contains("alice"))
        #expect(item.id.string.count == 24)
        #expect(item.id.string == Self.ids.id(feed: "board", userKey: "s:alice@example.com"))
        #expect(item.id.string != Self.ids.id(feed: "other", userKey: "s:alice@example.com"))
        #expect(item.id.string != PresenceItemIDs().id(feed: "board", userKey: "s:alice@example.com"))
        #expect(item.model["name"]?.stringValue == (identities ? "Alice" : nil))
        #expect(item.model["sub"]?.stringValue == (identities ? "alice@example.com" : nil))
        #expect(item.kind == PresenceTracker.itemKind)
    }

    @Test func aHiddenConnectionMakesNoOnePresent() {
        var tracker = Self.tracker()
        tracker.open(1, Self.alice(hidden: true), now: 0, wall: 0)
        #expect(Self.shown(tracker.advance(now: 0).first ?? tracker.snapshot).count == 0)
        tracker.open(2, Self.alice(), now: 1, wall: 1)
        #expect(Self.shown(tracker.advance(now: 1).last!).items.first?["connections"]?.numberValue == 1)
    }

    @Test func itemsShowAtMostEightMetas() {
        var tracker = Self.tracker()
        for connection in 1...10 { tracker.open(connection, Self.alice(#"{"n":\#(connection)}"#), now: 0, wall: 0) }
        let item = Self.shown(tracker.advance(now: 0).last!).items[0]
        #expect(item["connections"]?.numberValue == 10)
        #expect(item["metas"]?.arrayValue?.count == PresenceTracker.maxMetasShown)
    }

    // MARK: Against an oracle

    /// One connection as the oracle keeps it.
    struct Opened {
        var connection: Int
        var key: String
        var meta: JSONModel?
        var hidden: Bool
        var openedAt: Double
        var closedAt: Double?
    }

    /// Who is present at `now`, computed from every connection's interval: a user is present within
    /// the union of their visible connections' `[open, close + grace)`; they joined at the start of the
    /// union's part that holds `now`.
    static func oracle(_ log: [Opened], now: Double, settings: PresenceTracker.Settings, feed: String) -> WireSnapshot {
        var present: [(joined: Double, item: WireItem)] = []
        for (key, opened) in Dictionary(grouping: log.filter { !$0.hidden }, by: \.key) {
            let spans = opened.map { (start: $0.openedAt, end: ($0.closedAt ?? .infinity) + settings.grace) }.sorted { $0.start < $1.start }
            var part: (start: Double, end: Double)?
            var holding: (start: Double, end: Double)?
            for span in spans {
                if let current = part, span.start < current.end { part = (current.start, max(current.end, span.end)) } else { part = span }
                if let current = part, current.start <= now, now < current.end { holding = current }
            }
            guard let joined = holding?.start else { continue }
            let live = opened.filter { $0.openedAt <= now && ($0.closedAt.map { $0 > now } ?? true) }.sorted { $0.openedAt < $1.openedAt }
            let metas = live.isEmpty ? [opened.filter { $0.closedAt != nil }.max { $0.closedAt! < $1.closedAt! }!.meta] : live.map(\.meta)
            let model = JSONValue.object(JSONObject([
                ("connections", .number(Double(metas.count))),
                ("metas", .array(metas.compactMap { $0?.value }.prefix(PresenceTracker.maxMetasShown).map { $0 })),
                ("since", .number((1000 + joined).rounded(.down))),
            ]))
            present.append((joined, WireItem(id: ids.id(feed: feed, userKey: key), kind: PresenceTracker.itemKind, model: model)))
        }
        present.sort { $0.joined < $1.joined }
        return PresenceTracker.snapshot(present.prefix(settings.listed).map(\.item), count: present.count)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func matchesTheOracleOnRandomOpensClosesAndFlushes(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let settings = PresenceTracker.Settings(interval: 0.5, grace: 1.0005, listed: 6, batchBytes: 1200)
        var tracker = PresenceTracker(feed: "board", settings: settings, ids: Self.ids)
        var log: [Opened] = []
        var milliseconds = 0
        var connections = 0
        var lastFlush: Double?
        var written = WireSnapshot()
        var mostShown = 0
        let users: [PresenceUser] = (1...8).map { .identified(subject: "u\($0)", name: nil) } + [.anonymous(carried: "c1"), .anonymous(carried: "c2"), .anonymous(carried: nil)]
        for _ in 0..<600 {
            milliseconds += Int.random(in: 1...300, using: &random)
            let now = Double(milliseconds) / 1000
            let open = log.indices.filter { log[$0].closedAt == nil }
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                connections += 1
                let user = users.randomElement(using: &random)!
                let meta: JSONModel? = Bool.random(using: &random) ? try! JSONModel(parsing: #"{"n":\#(connections)}"#) : nil
                let hidden = Int.random(in: 0..<5, using: &random) == 0
                tracker.open(connections, PresenceConnection(user: user, meta: meta, hidden: hidden), now: now, wall: 1000 + now)
                let key = switch user {
                case .identified(let subject, _): "s:" + subject
                case .anonymous(let carried?): "a:" + carried
                case .anonymous(nil): "c:\(connections)"
                }
                log.append(Opened(connection: connections, key: key, meta: meta, hidden: hidden, openedAt: now))
            case 4..<7 where !open.isEmpty:
                let index = open.randomElement(using: &random)!
                log[index].closedAt = now
                tracker.close(log[index].connection, now: now)
            default:
                let steps = tracker.advance(now: now)
                guard !steps.isEmpty else { continue }
                if let lastFlush { #expect(now - lastFlush >= settings.interval) }
                lastFlush = now
                for step in steps {
                    var writer = JSONWriter()
                    WireCodec.writeOperations(WireSnapshot.diff(from: written, to: step).operations, into: &writer)
                    #expect(writer.bytes.count <= settings.batchBytes)
                    written = step
                }
                #expect(WireCodec.encode(written) == WireCodec.encode(Self.oracle(log, now: now, settings: settings, feed: "board")))
                mostShown = max(mostShown, tracker.count)
            }
        }
        #expect(mostShown > settings.listed)  // the threshold was crossed
        // Past every deadline, what was written is who is present.
        var now = Double(milliseconds) / 1000
        while let deadline = tracker.nextDeadline {
            now = max(now, deadline)
            _ = tracker.advance(now: now)
        }
        #expect(WireCodec.encode(tracker.snapshot) == WireCodec.encode(Self.oracle(log, now: now, settings: settings, feed: "board")))
    }
}
