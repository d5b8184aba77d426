/// Who is live in a family of hosted view models, and who should not be: the pure state machine that
/// decides its members' lifetimes (see ``FamilyLimits``). It has no clock, timer, task or lock of its
/// own: its owner (one actor or one lock per family) tells it what happened and when, in monotonic
/// seconds, runs the loads it asks for, drops the members it names, and sets one timer for
/// ``expire(now:)`` at the time it gives.
///
/// The rules:
/// - A member is *loading* (its loader runs; exactly one load per key) or *live*.
/// - A live member with subscribers stays. A live member without subscribers is *idle* once `idle`
///   seconds have passed since its last use (a read, an action, a subscriber joining or leaving, its
///   load finishing); only idle members are dropped, by ``expire(now:)`` or to make room.
/// - Live and loading members together are at most `maxLive`. A new key past it takes the place of
///   the member idle longest; when none is idle, it is refused with the seconds until one may be.
/// - A load that fails leaves nothing behind: the next use loads again. A load that answers "no such
///   key" is remembered for `notFoundMemory` seconds, and uses meanwhile get that answer without a load.
///
/// Times that go backwards are taken as the latest time seen, so the order of idle members is the
/// order of their last uses. Members idle from the same moment are dropped in the order they were last used.
package struct FamilyRoster: Sendable {
    /// A load the roster asked for; its owner reports how it ended with ``finishLoad(_:_:at:)``.
    package struct LoadTicket: Hashable, Sendable {
        /// The member's key.
        package var key: String
        /// Which load of that key (a key removed while loading and used again has a new one).
        package var serial: UInt64

        package init(key: String, serial: UInt64) {
            self.key = key
            self.serial = serial
        }
    }

    /// What a use of a key should do.
    package enum Decision: Equatable, Sendable {
        /// Use the live member.
        case live
        /// Drop `evicting` first if given (the member idle longest, to make room), then run the loader
        /// and report with ``finishLoad(_:_:at:)``.
        case load(LoadTicket, evicting: String?)
        /// A load of this key is under way: wait for its end (the owner keeps the waiters by ticket).
        case wait(LoadTicket)
        /// The family is full and no member is idle: refuse (`503`), `Retry-After` this many seconds.
        case full(retryAfter: Int)
        /// The loader answered "no such key" for this key a moment ago: answer that again (`404`).
        case noSuchKey
    }

    /// How a load ended.
    package enum LoadOutcome: Equatable, Sendable {
        /// The member is made: it is live.
        case loaded
        /// The loader threw or timed out: nothing is kept, the next use loads again.
        case failed
        /// The loader said the key names nothing: remembered for `notFoundMemory` seconds.
        case noSuchKey
    }

    /// Where a key stands.
    package enum Phase: Equatable, Sendable {
        case loading(LoadTicket)
        case live(subscribers: Int)
    }

    /// What ``expire(now:)`` dropped, and when to call it next.
    package struct Expiry: Equatable, Sendable {
        /// The members to drop, idle longest first.
        package var dropped: [String]
        /// The earliest time anything can expire (a member or a remembered missing key); nil when
        /// nothing can until something else happens.
        package var next: Double?

        package init(dropped: [String], next: Double?) {
            self.dropped = dropped
            self.next = next
        }
    }

    /// Counts for `/metrics`. (Loader latency samples are the owner's: it times the loads.)
    package struct Counters: Equatable, Sendable {
        /// Members live now.
        package var live = 0
        /// Members being loaded now.
        package var loading = 0
        /// Loads that made a member.
        package var made = 0
        /// Members dropped for being idle: by ``expire(now:)`` or to make room.
        package var dropped = 0
        /// Members removed by the program (``remove(_:)``), live or loading.
        package var removed = 0
        /// Loads that failed (threw or timed out).
        package var loaderErrors = 0
        /// Loads that answered "no such key".
        package var noSuchKey = 0
        /// Uses refused because the family was full.
        package var refusedFull = 0

        /// All zero.
        package init() {}
    }

    package let limits: FamilyLimits
    package private(set) var counters = Counters()

    /// A member, in `nodes`; `older`/`newer` link the idle order (live, no subscribers), -1 for none.
    private struct Node {
        var key: String
        var loading: LoadTicket?
        var subscribers = 0
        var lastUse: Double
        var older = -1
        var newer = -1
        var listed = false
    }

    private var nodes: [Node] = []
    private var freeNodes: [Int] = []
    private var index: [String: Int] = [:]
    /// The idle order: live members without subscribers, least recently used first.
    private var oldest = -1
    private var newest = -1
    /// Keys answered "no such key", until when; `forgetting` holds them in the order they expire
    /// (entries whose key was forgotten or remembered again since are skipped).
    private var notFound: [String: Double] = [:]
    private var forgetting: [(key: String, until: Double)] = []
    private var forgettingStart = 0
    private var nextSerial: UInt64 = 0
    private var clock = -Double.infinity

    /// A roster with no members. `limits` must be valid (``FamilyLimits/problem`` nil).
    package init(limits: FamilyLimits = FamilyLimits()) {
        precondition(limits.problem == nil, limits.problem ?? "")
        self.limits = limits
    }

    /// Where `key` stands, or nil when it has no member.
    package func phase(of key: String) -> Phase? {
        guard let slot = index[key] else { return nil }
        let node = nodes[slot]
        if let ticket = node.loading { return .loading(ticket) }
        return .live(subscribers: node.subscribers)
    }

    /// Whether `key` is remembered as "no such key" at `now`.
    package func remembersMissing(_ key: String, now: Double) -> Bool {
        guard let until = notFound[key] else { return false }
        return max(now, clock) < until
    }

    // MARK: Uses

    /// A use of `key` at `now` (a read, a subscription, an action): what to do. A live member's use
    /// counts as its last use.
    /// - Complexity: O(1) expected (hashing the key), amortized over the remembered missing keys.
    package mutating func use(_ key: String, at now: Double) -> Decision {
        let now = advance(to: now)
        forgetExpired(now: now)
        if let slot = index[key] {
            if let ticket = nodes[slot].loading { return .wait(ticket) }
            touch(slot, at: now)
            return .live
        }
        if let until = notFound[key] {
            if now < until { return .noSuchKey }
            notFound[key] = nil
        }
        var evicting: String?
        if index.count >= limits.maxLive {
            guard oldest >= 0, isIdle(oldest, now: now) else {
                counters.refusedFull += 1
                return .full(retryAfter: retryAfter(now: now))
            }
            evicting = nodes[oldest].key
            drop(oldest)
            counters.dropped += 1
        }
        nextSerial += 1
        let ticket = LoadTicket(key: key, serial: nextSerial)
        insert(Node(key: key, loading: ticket, lastUse: now))
        counters.loading += 1
        return .load(ticket, evicting: evicting)
    }

    /// How the load `ticket` ended, at `now`. False when the ticket is stale (its member was removed
    /// meanwhile): the owner discards what it loaded, and nothing is counted.
    /// - Complexity: O(1) expected.
    @discardableResult
    package mutating func finishLoad(_ ticket: LoadTicket, _ outcome: LoadOutcome, at now: Double) -> Bool {
        let now = advance(to: now)
        guard let slot = index[ticket.key], nodes[slot].loading == ticket else { return false }
        switch outcome {
        case .loaded:
            counters.loading -= 1
            nodes[slot].loading = nil
            nodes[slot].lastUse = now
            link(slot)
            counters.live += 1
            counters.made += 1
        case .failed:
            drop(slot)
            counters.loaderErrors += 1
        case .noSuchKey:
            drop(slot)
            counters.noSuchKey += 1
            let until = now + limits.notFoundMemory
            notFound[ticket.key] = until
            forgetting.append((ticket.key, until))
        }
        return true
    }

    /// A subscriber of the live member `key` joined at `now`. False when `key` is not live (use it first).
    /// - Complexity: O(1) expected.
    @discardableResult
    package mutating func join(_ key: String, at now: Double) -> Bool {
        let now = advance(to: now)
        guard let slot = index[key], nodes[slot].loading == nil else { return false }
        if nodes[slot].subscribers == 0 { unlink(slot) }
        nodes[slot].subscribers += 1
        nodes[slot].lastUse = now
        return true
    }

    /// A subscriber of `key` left at `now`: the last one to leave starts the member's idle time. False
    /// when `key` is not live or has no subscribers.
    /// - Complexity: O(1) expected.
    @discardableResult
    package mutating func leave(_ key: String, at now: Double) -> Bool {
        let now = advance(to: now)
        guard let slot = index[key], nodes[slot].loading == nil, nodes[slot].subscribers > 0 else { return false }
        nodes[slot].subscribers -= 1
        nodes[slot].lastUse = now
        if nodes[slot].subscribers == 0 { link(slot) }
        return true
    }

    /// An action (or any other use) on the live member `key` at `now`. False when `key` is not live.
    /// - Complexity: O(1) expected.
    @discardableResult
    package mutating func act(_ key: String, at now: Double) -> Bool {
        let now = advance(to: now)
        guard let slot = index[key], nodes[slot].loading == nil else { return false }
        touch(slot, at: now)
        return true
    }

    /// The program deleted `key`: its member (live, with subscribers or not, or loading: that load's
    /// end will be stale) and any "no such key" memory of it are forgotten. False when it had no member.
    /// - Complexity: O(1) expected.
    @discardableResult
    package mutating func remove(_ key: String) -> Bool {
        notFound[key] = nil
        guard let slot = index[key] else { return false }
        drop(slot)
        counters.removed += 1
        return true
    }

    // MARK: Expiry

    /// The members idle at `now` (no subscribers, unused for `idle` seconds), which the owner drops;
    /// missing keys remembered until `now` are forgotten.
    /// - Complexity: O(k + 1) amortized, k being the members dropped.
    package mutating func expire(now: Double) -> Expiry {
        let now = advance(to: now)
        var dropped: [String] = []
        while oldest >= 0, isIdle(oldest, now: now) {
            dropped.append(nodes[oldest].key)
            drop(oldest)
        }
        counters.dropped += dropped.count
        forgetExpired(now: now)
        return Expiry(dropped: dropped, next: nextExpiry)
    }

    /// The earliest time anything can expire, nil when nothing can until something else happens. It
    /// may be early (a missing key forgotten by ``remove(_:)`` still counts), never late.
    /// - Complexity: O(1).
    package var nextExpiry: Double? {
        let member = oldest >= 0 ? nodes[oldest].lastUse + limits.idle : nil
        let missing = forgettingStart < forgetting.count ? forgetting[forgettingStart].until : nil
        switch (member, missing) {
        case let (member?, missing?): return min(member, missing)
        case let (member, missing): return member ?? missing
        }
    }

    // MARK: Internals

    private mutating func advance(to now: Double) -> Double {
        clock = max(clock, now)
        return clock
    }

    private func isIdle(_ slot: Int, now: Double) -> Bool {
        nodes[slot].lastUse + limits.idle <= now
    }

    /// Seconds until the member idle longest will be idle, or `idle` when no member is without subscribers.
    private func retryAfter(now: Double) -> Int {
        let wait = oldest >= 0 ? nodes[oldest].lastUse + limits.idle - now : limits.idle
        return max(1, Int(wait.rounded(.up)))
    }

    private mutating func touch(_ slot: Int, at now: Double) {
        nodes[slot].lastUse = now
        if nodes[slot].listed {
            unlink(slot)
            link(slot)
        }
    }

    private mutating func insert(_ node: Node) {
        let slot: Int
        if let free = freeNodes.popLast() {
            slot = free
            nodes[slot] = node
        } else {
            slot = nodes.count
            nodes.append(node)
        }
        index[node.key] = slot
    }

    /// Forgets the member in `slot` (live or loading), keeping the counters of what is live and loading.
    private mutating func drop(_ slot: Int) {
        if nodes[slot].loading != nil { counters.loading -= 1 } else { counters.live -= 1 }
        unlink(slot)
        index[nodes[slot].key] = nil
        nodes[slot] = Node(key: "", lastUse: 0)
        freeNodes.append(slot)
    }

    /// Appends `slot` to the idle order as its most recently used.
    private mutating func link(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        nodes[slot].listed = true
        if newest >= 0 { nodes[newest].newer = slot } else { oldest = slot }
        newest = slot
    }

    private mutating func unlink(_ slot: Int) {
        guard nodes[slot].listed else { return }
        let (older, newer) = (nodes[slot].older, nodes[slot].newer)
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        nodes[slot].older = -1
        nodes[slot].newer = -1
        nodes[slot].listed = false
    }

    private mutating func forgetExpired(now: Double) {
        while forgettingStart < forgetting.count, forgetting[forgettingStart].until <= now {
            let entry = forgetting[forgettingStart]
            if notFound[entry.key] == entry.until { notFound[entry.key] = nil }
            forgettingStart += 1
        }
        if forgettingStart > 64, forgettingStart * 2 > forgetting.count {
            forgetting.removeFirst(forgettingStart)
            forgettingStart = 0
        }
    }
}
