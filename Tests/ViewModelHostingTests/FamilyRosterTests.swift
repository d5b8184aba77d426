import Testing
import TestSupport
import ViewModelHosting

struct FamilyRosterTests {
    typealias Decision = FamilyRoster.Decision

    /// The ticket of a `.load` decision.
    static func loadTicket(_ decision: Decision) -> FamilyRoster.LoadTicket? {
        if case .load(let ticket, _) = decision { return ticket }
        return nil
    }

    /// A roster with `keys` live, loaded in that order at `at`.
    static func roster(_ limits: FamilyLimits = FamilyLimits(idle: 60, maxLive: 100, notFoundMemory: 10), live keys: [String], at: Double = 0) throws -> Roster {
        let roster = Roster(limits)
        for key in keys {
            let ticket = try #require(loadTicket(roster.use(key, at: at)))
            #expect(roster.finishLoad(ticket, .loaded, at: at))
        }
        return roster
    }

    // MARK: One key

    @Test func theFirstUseLoadsAndUsesMeanwhileWaitForThatLoad() throws {
        let roster = Roster()
        let first = roster.use("alice", at: 0)
        let ticket = try #require(Self.loadTicket(first))
        #expect(first == .load(ticket, evicting: nil))
        #expect(roster.use("alice", at: 1) == .wait(ticket))
        #expect(roster.use("alice", at: 2) == .wait(ticket))
        #expect(roster.phase(of: "alice") == .loading(ticket))
        #expect(roster.counters.loading == 1 && roster.counters.live == 0)
        #expect(roster.finishLoad(ticket, .loaded, at: 3))
        #expect(roster.use("alice", at: 4) == .live)
        #expect(roster.phase(of: "alice") == .live(subscribers: 0))
        var counters = FamilyRoster.Counters()
        counters.live = 1
        counters.made = 1
        #expect(roster.counters == counters)
        #expect(!roster.finishLoad(ticket, .loaded, at: 5))  // reported twice: stale
    }

    @Test(arguments: [FamilyRoster.LoadOutcome.failed, .noSuchKey])
    func aLoadThatEndsWithoutAMemberLeavesNothing(outcome: FamilyRoster.LoadOutcome) throws {
        let roster = Roster()
        let ticket = try #require(Self.loadTicket(roster.use("bob", at: 0)))
        #expect(roster.finishLoad(ticket, outcome, at: 1))
        #expect(roster.phase(of: "bob") == nil)
        #expect(roster.counters.live == 0 && roster.counters.loading == 0)
        #expect(roster.counters.loaderErrors == (outcome == .failed ? 1 : 0))
        #expect(roster.counters.noSuchKey == (outcome == .noSuchKey ? 1 : 0))
        // A failure is tried again at once; a missing key only after it is forgotten.
        let next = roster.use("bob", at: 2)
        if outcome == .failed {
            #expect(Self.loadTicket(next)?.serial == ticket.serial + 1)
        } else {
            #expect(next == .noSuchKey)
        }
    }

    @Test(arguments: [(1.0, true), (10.9, true), (11.0, false), (500.0, false)])
    func aMissingKeyIsRememberedForItsTime(usedAt: Double, remembered: Bool) throws {
        let roster = Roster(FamilyLimits(notFoundMemory: 10))
        let ticket = try #require(Self.loadTicket(roster.use("ghost", at: 0)))
        roster.finishLoad(ticket, .noSuchKey, at: 1)  // remembered until 11
        #expect(roster.remembersMissing("ghost", now: usedAt) == remembered)
        let decision = roster.use("ghost", at: usedAt)
        #expect(remembered ? decision == .noSuchKey : Self.loadTicket(decision) != nil)
    }

    @Test func removingForgetsAMemberItsLoadAndItsMissingMemory() throws {
        let roster = try Self.roster(live: ["a"])
        #expect(roster.join("a", at: 1))
        #expect(roster.remove("a"))  // subscribers or not: the program deletes it
        #expect(roster.phase(of: "a") == nil && roster.counters.live == 0 && roster.counters.removed == 1)
        let loading = try #require(Self.loadTicket(roster.use("b", at: 2)))
        #expect(roster.remove("b"))
        #expect(!roster.finishLoad(loading, .loaded, at: 3))  // its end is stale: the owner discards it
        #expect(roster.phase(of: "b") == nil && roster.counters.loading == 0 && roster.counters.made == 1)
        let missing = try #require(Self.loadTicket(roster.use("c", at: 4)))
        roster.finishLoad(missing, .noSuchKey, at: 4)
        #expect(!roster.remove("c"))  // no member, but the memory goes
        #expect(Self.loadTicket(roster.use("c", at: 5)) != nil)
        #expect(!roster.remove("nobody"))
    }

    // MARK: Idle time

    @Test(arguments: [
        // (last use, now, dropped): idle 60 s after the last use, not before.
        (0.0, 59.9, false), (0.0, 60.0, true), (30.0, 89.0, false), (30.0, 90.0, true),
    ])
    func aMemberWithoutSubscribersIsDroppedAfterIdleSeconds(lastUse: Double, now: Double, dropped: Bool) throws {
        let roster = try Self.roster(live: ["a"])
        #expect(roster.act("a", at: lastUse))
        let expiry = roster.expire(now: now)
        #expect(expiry.dropped == (dropped ? ["a"] : []))
        #expect(expiry.next == (dropped ? nil : lastUse + 60))
        #expect(roster.counters.dropped == (dropped ? 1 : 0) && roster.counters.live == (dropped ? 0 : 1))
    }

    @Test func subscribersKeepAMemberAndTheLastToLeaveStartsItsIdleTime() throws {
        let roster = try Self.roster(live: ["a"])
        #expect(roster.join("a", at: 1) && roster.join("a", at: 2))
        #expect(roster.expire(now: 1_000) == FamilyRoster.Expiry(dropped: [], next: nil))
        #expect(roster.leave("a", at: 1_000))
        #expect(roster.expire(now: 2_000).dropped == [])
        #expect(roster.leave("a", at: 2_000))
        #expect(!roster.leave("a", at: 2_000))  // none left
        #expect(roster.expire(now: 2_059).next == 2_060)
        #expect(roster.expire(now: 2_060).dropped == ["a"])
        #expect(!roster.join("a", at: 2_061) && !roster.act("a", at: 2_061))  // gone: use it first
    }

    @Test func expiryDropsIdleMembersLeastRecentlyUsedFirstAndNamesTheNextTime() throws {
        let roster = try Self.roster(live: ["a", "b", "c", "d"])
        roster.act("b", at: 5)
        roster.act("a", at: 7)
        roster.join("d", at: 8)
        #expect(roster.use("c", at: 9) == .live)
        #expect(roster.expire(now: 66) == FamilyRoster.Expiry(dropped: ["b"], next: 67))
        #expect(roster.expire(now: 100) == FamilyRoster.Expiry(dropped: ["a", "c"], next: nil))
        #expect(roster.counters.live == 1)
    }

    @Test func timeThatGoesBackwardsIsTakenAsTheLatestSeen() throws {
        let roster = try Self.roster(live: ["a"], at: 100)
        #expect(roster.act("a", at: 50))  // counts as 100
        #expect(roster.expire(now: 159).dropped == [] && roster.nextExpiry == 160)
    }

    // MARK: The maximum

    @Test(arguments: [
        // (now, decision): a and b were last used at 0 and 20; 60 s idle.
        (20.0, Decision.full(retryAfter: 40)),
        (59.5, .full(retryAfter: 1)),
        (60.0, .load(FamilyRoster.LoadTicket(key: "new", serial: 3), evicting: "a")),
        (90.0, .load(FamilyRoster.LoadTicket(key: "new", serial: 3), evicting: "a")),
    ])
    func pastTheMaximumTheMemberIdleLongestMakesRoomOrTheUseIsRefused(now: Double, decision: Decision) throws {
        let roster = try Self.roster(FamilyLimits(idle: 60, maxLive: 2), live: ["a", "b"])
        roster.act("b", at: 20)
        #expect(roster.use("new", at: now) == decision)
        #expect(roster.counters.live + roster.counters.loading == 2)
        #expect(roster.counters.refusedFull == (Self.loadTicket(decision) == nil ? 1 : 0))
    }

    @Test func loadsCountAgainstTheMaximumAndSubscribersAreNeverEvicted() throws {
        let roster = try Self.roster(FamilyLimits(idle: 60, maxLive: 2), live: ["a"])
        roster.join("a", at: 0)
        let loading = try #require(Self.loadTicket(roster.use("b", at: 0)))
        #expect(roster.use("c", at: 1_000) == .full(retryAfter: 60))  // nobody without subscribers: the idle time
        roster.finishLoad(loading, .loaded, at: 1_000)
        #expect(roster.use("c", at: 1_030) == .full(retryAfter: 30))
        #expect(Self.loadTicket(roster.use("c", at: 1_060)) != nil)
        #expect(roster.phase(of: "a") == .live(subscribers: 1) && roster.phase(of: "b") == nil)
        #expect(roster.counters.refusedFull == 2 && roster.counters.dropped == 1)
    }

    @Test func fiftyThousandMembersAreEvictedInTheOrderTheyWereLastUsed() throws {
        let count = 50_000
        let keys = (0..<count).map { "user\($0)" }
        let roster = try Self.roster(FamilyLimits(idle: 60, maxLive: count), live: keys)
        // Use them again in another order (odd ones first), then make room for as many new keys.
        let order = keys.indices.filter { $0 % 2 == 1 } + keys.indices.filter { $0 % 2 == 0 }
        for index in order {
            #expect(roster.use(keys[index], at: 1) == .live)
        }
        var evicted: [String] = []
        for index in 0..<count {
            guard case .load(let ticket, let evicting?) = roster.use("new\(index)", at: 61) else { Issue.record("no room at \(index)"); return }
            evicted.append(evicting)
            roster.finishLoad(ticket, .loaded, at: 61)
        }
        #expect(evicted == order.map { keys[$0] })
        #expect(roster.counters.live == count && roster.counters.dropped == count)
    }

    @Test func theNextExpiryIsNeverLaterThanAMissingKeysEnd() throws {
        let roster = Roster(FamilyLimits(idle: 60, notFoundMemory: 10))
        let ticket = try #require(Self.loadTicket(roster.use("ghost", at: 0)))
        roster.finishLoad(ticket, .noSuchKey, at: 0)
        #expect(roster.expire(now: 1) == FamilyRoster.Expiry(dropped: [], next: 10))
        #expect(roster.expire(now: 10) == FamilyRoster.Expiry(dropped: [], next: nil))
        #expect(!roster.remembersMissing("ghost", now: 10))
    }

    @Test(arguments: [
        (FamilyLimits(), nil),
        (FamilyLimits(idle: -1), "idle"),
        (FamilyLimits(idle: .infinity), "idle"),
        (FamilyLimits(maxLive: 0), "at least one"),
        (FamilyLimits(notFoundMemory: .nan), "missing key"),
        (FamilyLimits(loaderTimeout: 0), "loader timeout"),
    ] as [(FamilyLimits, String?)])
    func limitsSayWhatIsWrong(limits: FamilyLimits, problem: String?) {
        if let problem {
            #expect(limits.problem?.contains(problem) == true)
        } else {
            #expect(limits.problem == nil)
        }
    }

    @Test func theDefaultsAreTheDocumentedOnes() {
        #expect(FamilyLimits() == FamilyLimits(idle: 60, maxLive: 10_000, notFoundMemory: 10, loaderTimeout: 10))
    }

    // MARK: Against a model

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomSequencesMatchASimpleModel(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let limits = FamilyLimits(idle: 10, maxLive: 4, notFoundMemory: 5)
        let roster = Roster(limits)
        var model = RosterModel(limits: limits)
        let keys = ["a", "b", "c", "d", "e", "f", "g"]
        var tickets: [FamilyRoster.LoadTicket] = []
        var now = 0.0
        var seen: Set<String> = []  // the kinds of decisions and drops met, so the run is known to reach them
        for step in 0..<3_000 {
            now += [0, 0, 0.5, 1, 2, 4, 9, 15, -3].randomElement(using: &generator)!
            let key = keys.randomElement(using: &generator)!
            let before = model
            let context = Comment(rawValue: "seed \(seed), step \(step), t \(now), key \(key)")
            var removed: String?
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<30:
                let decision = roster.use(key, at: now)
                let expected = model.use(key, at: now)
                #expect(decision == expected, context)
                seen.insert("\(decision)".prefix { $0 != "(" }.description)
                if case .load(let ticket, let evicting) = decision {
                    if evicting != nil { seen.insert("evict") }
                    tickets.append(ticket)
                    if let evicting { #expect(before.isIdle(evicting, at: max(now, before.clock)), context) }
                }
            case 30..<50 where !tickets.isEmpty:
                // Mostly a load under way, sometimes a stale one.
                let ticket = tickets.remove(at: Int.random(in: 0..<tickets.count, using: &generator))
                let outcome = [FamilyRoster.LoadOutcome.loaded, .loaded, .loaded, .failed, .noSuchKey].randomElement(using: &generator)!
                let expected = model.finishLoad(ticket, outcome, at: now)
                #expect(roster.finishLoad(ticket, outcome, at: now) == expected, context)
            case 30..<62:
                let expected = model.join(key, at: now)
                #expect(roster.join(key, at: now) == expected, context)
            case 62..<80:
                let expected = model.leave(key, at: now)
                #expect(roster.leave(key, at: now) == expected, context)
            case 80..<88:
                let expected = model.act(key, at: now)
                #expect(roster.act(key, at: now) == expected, context)
            case 88..<97:
                let expiry = roster.expire(now: now)
                let expected = model.expire(now: now)
                #expect(expiry.dropped == expected.dropped, context)
                if !expiry.dropped.isEmpty { seen.insert("expire") }
                for dropped in expiry.dropped { #expect(before.isIdle(dropped, at: max(now, before.clock)), context) }
                // Never late: nothing can expire before `next`, and it is in the future.
                if let next = expected.next { #expect(expiry.next.map { $0 <= next && $0 > model.clock } == true, context) }
            default:
                removed = key
                let expected = model.remove(key)
                #expect(roster.remove(key) == expected, context)
            }
            // The invariants, and the same view of every key.
            #expect(roster.counters == model.counters, context)
            #expect(roster.counters.live + roster.counters.loading <= limits.maxLive, context)
            for key in keys {
                #expect(roster.phase(of: key) == model.phase(of: key), context)
                #expect(roster.remembersMissing(key, now: now) == model.remembersMissing(key, now: now), context)
                if case .live(let subscribers)? = before.phase(of: key), subscribers > 0, roster.phase(of: key) == nil, key != removed {
                    Issue.record("\(key) dropped with subscribers: \(context)")  // only the program's `remove` may
                }
            }
        }
        #expect(seen == ["live", "load", "wait", "full", "noSuchKey", "evict", "expire"])
    }
}

/// The roster under test, by reference: `#expect` cannot call a mutating method of a local value.
final class Roster {
    var roster: FamilyRoster

    init(_ limits: FamilyLimits = FamilyLimits()) { roster = FamilyRoster(limits: limits) }

    var counters: FamilyRoster.Counters { roster.counters }
    var nextExpiry: Double? { roster.nextExpiry }
    func phase(of key: String) -> FamilyRoster.Phase? { roster.phase(of: key) }
    func remembersMissing(_ key: String, now: Double) -> Bool { roster.remembersMissing(key, now: now) }
    func use(_ key: String, at now: Double) -> FamilyRoster.Decision { roster.use(key, at: now) }
    @discardableResult func finishLoad(_ ticket: FamilyRoster.LoadTicket, _ outcome: FamilyRoster.LoadOutcome, at now: Double) -> Bool {
        roster.finishLoad(ticket, outcome, at: now)
    }
    @discardableResult func join(_ key: String, at now: Double) -> Bool { roster.join(key, at: now) }
    @discardableResult func leave(_ key: String, at now: Double) -> Bool { roster.leave(key, at: now) }
    @discardableResult func act(_ key: String, at now: Double) -> Bool { roster.act(key, at: now) }
    @discardableResult func remove(_ key: String) -> Bool { roster.remove(key) }
    func expire(now: Double) -> FamilyRoster.Expiry { roster.expire(now: now) }
}

/// The rules of ``FamilyRoster`` written as plainly as possible: every decision scans every member.
private struct RosterModel {
    struct Member {
        var loading: FamilyRoster.LoadTicket?
        var subscribers = 0
        var lastUse: Double
        /// Which use was last, among uses at the same time.
        var order: Int
    }

    let limits: FamilyLimits
    var members: [String: Member] = [:]
    var missingUntil: [String: Double] = [:]
    var counters = FamilyRoster.Counters()
    var clock = -Double.infinity
    var serial: UInt64 = 0
    var uses = 0

    init(limits: FamilyLimits) { self.limits = limits }

    mutating func advance(_ now: Double) -> Double {
        clock = max(clock, now)
        return clock
    }

    mutating func touch(_ key: String, at now: Double) {
        uses += 1
        members[key]?.lastUse = now
        members[key]?.order = uses
    }

    func isIdle(_ key: String, at now: Double) -> Bool {
        guard let member = members[key], member.loading == nil, member.subscribers == 0 else { return false }
        return member.lastUse + limits.idle <= now
    }

    /// Live members without subscribers, least recently used first.
    var idleOrder: [String] {
        members.filter { $0.value.loading == nil && $0.value.subscribers == 0 }
            .sorted { ($0.value.lastUse, $0.value.order) < ($1.value.lastUse, $1.value.order) }.map(\.key)
    }

    func phase(of key: String) -> FamilyRoster.Phase? {
        guard let member = members[key] else { return nil }
        if let ticket = member.loading { return .loading(ticket) }
        return .live(subscribers: member.subscribers)
    }

    func remembersMissing(_ key: String, now: Double) -> Bool {
        missingUntil[key].map { max(now, clock) < $0 } ?? false
    }

    mutating func use(_ key: String, at now: Double) -> FamilyRoster.Decision {
        let now = advance(now)
        if let member = members[key] {
            if let ticket = member.loading { return .wait(ticket) }
            touch(key, at: now)
            return .live
        }
        if let until = missingUntil[key], now < until { return .noSuchKey }
        var evicting: String?
        if members.count >= limits.maxLive {
            let order = idleOrder
            guard let oldest = order.first, isIdle(oldest, at: now) else {
                counters.refusedFull += 1
                let wait = order.first.map { members[$0]!.lastUse + limits.idle - now } ?? limits.idle
                return .full(retryAfter: max(1, Int(wait.rounded(.up))))
            }
            members[oldest] = nil
            counters.live -= 1
            counters.dropped += 1
            evicting = oldest
        }
        serial += 1
        let ticket = FamilyRoster.LoadTicket(key: key, serial: serial)
        uses += 1
        members[key] = Member(loading: ticket, lastUse: now, order: uses)
        counters.loading += 1
        return .load(ticket, evicting: evicting)
    }

    mutating func finishLoad(_ ticket: FamilyRoster.LoadTicket, _ outcome: FamilyRoster.LoadOutcome, at now: Double) -> Bool {
        let now = advance(now)
        guard members[ticket.key]?.loading == ticket else { return false }
        counters.loading -= 1
        switch outcome {
        case .loaded:
            members[ticket.key]?.loading = nil
            touch(ticket.key, at: now)
            counters.live += 1
            counters.made += 1
        case .failed:
            members[ticket.key] = nil
            counters.loaderErrors += 1
        case .noSuchKey:
            members[ticket.key] = nil
            counters.noSuchKey += 1
            missingUntil[ticket.key] = now + limits.notFoundMemory
        }
        return true
    }

    mutating func join(_ key: String, at now: Double) -> Bool {
        let now = advance(now)
        guard let member = members[key], member.loading == nil else { return false }
        members[key]?.subscribers += 1
        touch(key, at: now)
        return true
    }

    mutating func leave(_ key: String, at now: Double) -> Bool {
        let now = advance(now)
        guard let member = members[key], member.loading == nil, member.subscribers > 0 else { return false }
        members[key]?.subscribers -= 1
        touch(key, at: now)
        return true
    }

    mutating func act(_ key: String, at now: Double) -> Bool {
        let now = advance(now)
        guard let member = members[key], member.loading == nil else { return false }
        touch(key, at: now)
        return true
    }

    mutating func remove(_ key: String) -> Bool {
        missingUntil[key] = nil
        guard let member = members[key] else { return false }
        if member.loading != nil { counters.loading -= 1 } else { counters.live -= 1 }
        members[key] = nil
        counters.removed += 1
        return true
    }

    mutating func expire(now: Double) -> FamilyRoster.Expiry {
        let now = advance(now)
        let dropped = idleOrder.filter { isIdle($0, at: now) }
        for key in dropped { members[key] = nil }
        counters.live -= dropped.count
        counters.dropped += dropped.count
        missingUntil = missingUntil.filter { $0.value > now }
        let times = idleOrder.map { members[$0]!.lastUse + limits.idle } + missingUntil.values
        return FamilyRoster.Expiry(dropped: dropped, next: times.min())
    }
}
