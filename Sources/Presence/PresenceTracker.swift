import DiffStream
import DiffStreamJSON

/// Who is present on one feed, as a pure state machine: connections open and close, time passes
/// (`now`, monotonic seconds, is given to every call: nothing here reads a clock), and
/// ``advance(now:)`` says which snapshots the presence feed is to be written with.
///
/// - A user joins when their first visible connection opens, and leaves ``Settings/grace`` seconds
///   after their last one closed: a connection of theirs that opens within the grace period (a
///   reconnect, a reload, a stream reopened to add a feed) is neither a leave nor a join. While in
///   grace, the item stays as it was last shown.
/// - All connections of one user are one item; `connections` counts them (event streams, not tabs: a
///   browser's tabs that share one stream count once).
/// - Changes are coalesced: at most one flush per ``Settings/interval``, holding the net change (a
///   join and leave within one interval show nothing). A flush that would make a batch over
///   ``Settings/batchBytes`` is written as several snapshots, each a smaller step.
/// - Past ``Settings/listed`` users, the snapshot lists the first ones in join order; its section's
///   model has the total (`{"count":10000,"listed":100}`).
public struct PresenceTracker: Sendable {
    /// The numbers of a presence feed.
    public struct Settings: Sendable, Equatable {
        /// Seconds between two flushes at least (the coalescing interval).
        public var interval: Double
        /// Seconds a user stays after their last connection closed.
        public var grace: Double
        /// The most users a snapshot lists (the first in join order).
        public var listed: Int
        /// The largest batch one flush may write; larger changes are split.
        public var batchBytes: Int
        /// Whether items show who the user is (`sub`, `name`); otherwise items are anonymous and only
        /// the count means something.
        public var identities: Bool

        public init(interval: Double = 1, grace: Double = 5, listed: Int = 100, batchBytes: Int = 16 * 1024, identities: Bool = false) {
            self.interval = interval
            self.grace = grace
            self.listed = listed
            self.batchBytes = batchBytes
            self.identities = identities
        }
    }

    /// The section every presence snapshot has, whose model holds the count.
    public static let sectionID = "present"
    /// The kind of every item (the page's template for a present user).
    public static let itemKind = "presence"
    /// The most metas an item shows (of its connections, in the order they opened).
    public static let maxMetasShown = 8
    /// The most characters of a display name shown.
    public static let maxNameCharacters = 64
    /// The longest subject shown (a longer one is left out, never cut).
    public static let maxSubjectBytes = 256

    private struct Live: Sendable {
        var connection: Int
        var meta: JSONModel?
        var hidden: Bool
    }

    private struct Member: Sendable {
        /// Join order while present (visible); -1 while not.
        var order = -1
        var since = 0.0
        var subject: String?
        var name: String?
        var live: [Live] = []
        /// The metas shown when the last visible connection closed, shown until ``leaveAt``.
        var lingering: [JSONModel?]?
        var leaveAt: Double?

        var visibleLive: Int { live.count { !$0.hidden } }
        var isVisible: Bool { visibleLive > 0 || lingering != nil }
    }

    public let feed: String
    public let settings: Settings
    private let ids: PresenceItemIDs
    private var members: [String: Member] = [:]
    private var memberOfConnection: [Int: String] = [:]
    /// Members by the order they became present; entries whose order no longer matches are stale.
    private var joinOrder: [(order: Int, key: String)] = []
    private var staleOrders = 0
    private var nextOrder = 0
    /// Members in grace, by when they leave (non-decreasing, as the grace is one for all).
    private var leaving: [(key: String, at: Double)] = []
    private var leavingHead = 0
    /// How many members are visible now.
    public private(set) var count = 0
    private var dirty = false
    private var lastFlush: Double?
    /// What the last flush wrote.
    private var published = PresenceTracker.snapshot([], count: 0)

    public init(feed: String, settings: Settings = Settings(), ids: PresenceItemIDs) {
        self.feed = feed
        self.settings = settings
        self.ids = ids
    }

    /// Whether the tracker holds nothing: no connection, no one in grace, nothing left to write.
    public var isIdle: Bool { members.isEmpty && !dirty }

    /// When ``advance(now:)`` next has something to do (a flush that waits for its interval, else a
    /// user whose grace ends), or nil. While a flush waits, the graces that end before it need no call
    /// of their own: that flush ends them first and shows the same, so that under churn the caller
    /// wakes once per interval, not once per leave.
    public var nextDeadline: Double? {
        if dirty { return lastFlush.map { $0 + settings.interval } ?? 0 }
        return leavingHead < leaving.count ? leaving[leavingHead].at : nil
    }

    /// A connection opened at `now` (`wall`: seconds since 1970, shown as the user's `since`).
    /// `connection` is unique among the open ones.
    /// - Complexity: O(connections of the user).
    public mutating func open(_ connection: Int, _ what: PresenceConnection, now: Double, wall: Double) {
        expire(now: now)
        let key = Self.userKey(what.user, connection: connection)
        memberOfConnection[connection] = key
        var member = members[key] ?? Member()
        let was = member.isVisible
        member.live.append(Live(connection: connection, meta: what.meta, hidden: what.hidden))
        if case .identified(let subject, let name) = what.user {
            member.subject = subject
            if let name { member.name = name }
        }
        if !what.hidden {
            member.lingering = nil
            member.leaveAt = nil
        }
        if !was && member.isVisible {
            member.order = nextOrder
            member.since = wall
            nextOrder += 1
            joinOrder.append((member.order, key))
        }
        members[key] = member
        // A hidden connection changes nothing shown.
        settle(was: was, now: member.isVisible, changed: !what.hidden)
        dropStaleLeaves()
    }

    /// A connection closed at `now` (one not open is ignored).
    /// - Complexity: O(connections of the user), amortized.
    public mutating func close(_ connection: Int, now: Double) {
        expire(now: now)
        // Taken out of `members` while it changes, so that its `live` is not copied.
        guard let key = memberOfConnection.removeValue(forKey: connection), var member = members.removeValue(forKey: key) else { return }
        guard let index = member.live.firstIndex(where: { $0.connection == connection }) else {
            members[key] = member
            return
        }
        let was = member.isVisible
        let closed = member.live.remove(at: index)
        // The last visible connection lingers as it was shown: nothing changes on the wire until the
        // grace ends. A hidden one was never shown.
        var changed = !closed.hidden
        if !closed.hidden && member.visibleLive == 0 {
            member.lingering = [closed.meta]
            member.leaveAt = now + settings.grace
            leaving.append((key, now + settings.grace))
            changed = false
        }
        store(member, key: key, was: was, changed: changed)
        dropStaleLeaves()
    }

    /// Ends the grace periods due at `now`, then flushes if a change waits and its interval has passed.
    /// - Returns: the snapshots to write to the presence feed, in order (none: nothing to write now).
    ///   Each differs from the one before by a batch of at most ``Settings/batchBytes``.
    /// - Complexity: O(listed + stale entries) per flush, O(listed) per step written.
    public mutating func advance(now: Double) -> [WireSnapshot] {
        expire(now: now)
        guard dirty, lastFlush.map({ now >= $0 + settings.interval }) ?? true else { return [] }
        dirty = false
        lastFlush = now
        let target = Self.snapshot(firstVisible(), count: count)
        let steps = PresenceSteps.between(published, target, batchBytes: settings.batchBytes)
        published = target
        return steps
    }

    /// The snapshot of what the last flush wrote (an empty list before any).
    public var snapshot: WireSnapshot { published }

    // MARK: State

    private static func userKey(_ user: PresenceUser, connection: Int) -> String {
        switch user {
        case .identified(let subject, _): "s:" + subject
        case .anonymous(let carried?): "a:" + carried
        case .anonymous(nil): "c:\(connection)"
        }
    }

    /// Counts a member whose visibility went from `was` to `now`; `changed`: what it shows may differ.
    private mutating func settle(was: Bool, now: Bool, changed: Bool) {
        count += (now ? 1 : 0) - (was ? 1 : 0)
        if changed || was != now { dirty = true }
    }

    /// Keeps `member` (or drops it when nothing is left of it).
    private mutating func store(_ member: Member, key: String, was: Bool, changed: Bool = true) {
        if member.live.isEmpty && member.lingering == nil {
            members[key] = nil
        } else {
            members[key] = member
        }
        if was && !member.isVisible { staleOrders += 1 }
        settle(was: was, now: member.isVisible, changed: changed)
        compactIfStale()
    }

    private mutating func expire(now: Double) {
        while leavingHead < leaving.count, leaving[leavingHead].at <= now {
            let (key, at) = leaving[leavingHead]
            leavingHead += 1
            guard var member = members[key], member.leaveAt == at else { continue }
            let was = member.isVisible
            member.lingering = nil
            member.leaveAt = nil
            store(member, key: key, was: was)
        }
        dropStaleLeaves()
        if leavingHead > 64 && leavingHead * 2 > leaving.count {
            leaving.removeFirst(leavingHead)
            leavingHead = 0
        }
    }

    /// Forgets the grace periods at the queue's head that a reopen ended, so that ``nextDeadline``
    /// names a real one.
    private mutating func dropStaleLeaves() {
        while leavingHead < leaving.count, members[leaving[leavingHead].key]?.leaveAt != leaving[leavingHead].at { leavingHead += 1 }
    }

    private mutating func compactIfStale() {
        guard staleOrders > 64 && staleOrders > count else { return }
        joinOrder.removeAll { entry in members[entry.key].map { $0.order != entry.order || !$0.isVisible } ?? true }
        staleOrders = 0
    }

    /// The first ``Settings/listed`` visible members in join order, as items.
    private func firstVisible() -> [WireItem] {
        var listed: [WireItem] = []
        for (order, key) in joinOrder {
            guard listed.count < settings.listed else { break }
            guard let member = members[key], member.order == order, member.isVisible else { continue }
            listed.append(item(member, key: key))
        }
        return listed
    }

    /// The item of a listed member. Its id (an HMAC) is made here, for the listed ones only: most of
    /// 10,000 users are never listed, and a join need not pay for it.
    private func item(_ member: Member, key: String) -> WireItem {
        let visible = member.live.filter { !$0.hidden }
        let metas = visible.isEmpty ? member.lingering ?? [] : visible.map(\.meta)
        var fields: [(key: String, value: JSONValue)] = [
            ("connections", .number(Double(metas.count))),
            ("metas", .array(metas.compactMap { $0?.value }.prefix(Self.maxMetasShown).map { $0 })),
            ("since", .number(member.since.rounded(.down))),
        ]
        if settings.identities {
            if let name = member.name { fields.append(("name", .string(String(name.prefix(Self.maxNameCharacters))))) }
            if let subject = member.subject, subject.utf8.count <= Self.maxSubjectBytes { fields.append(("sub", .string(subject))) }
        }
        return WireItem(id: ids.id(feed: feed, userKey: key), kind: Self.itemKind, model: .object(JSONObject(fields)))
    }

    /// A presence snapshot: the section `present` with `{"count":…,"listed":…}`, and `items`.
    public static func snapshot(_ items: [WireItem], count: Int) -> WireSnapshot {
        let section = WireSection(id: sectionID, model: .object(JSONObject([("count", .number(Double(count))), ("listed", .number(Double(items.count)))])))
        // Item ids are HMACs of distinct keys: a duplicate would be a collision of 96 bits.
        return (try? WireSnapshot(sections: [Section(section, items: items)])) ?? WireSnapshot()
    }
}
