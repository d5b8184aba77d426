/// The limits of a family of hosted view models (one view model under a prefix, a member `PREFIX.KEY`
/// per key, made by the family's loader on first use): how long an unused member is kept, how many
/// may be live, how long a "no such key" answer is remembered, and how long a loader may take.
///
/// Times are in seconds, as everywhere in the server's configuration.
public struct FamilyLimits: Sendable, Equatable {
    /// Seconds a member with no subscribers and no use is kept before it is dropped. The default, 60,
    /// is the server's keep-alive idle timeout: a user who closes the app and opens it again within a
    /// minute finds their member live, and one who leaves frees it a minute later.
    public var idle: Double
    /// The most members live or being loaded at once. The default, 10,000, is `--max-feeds`'
    /// default: at the goal of 12 KiB a user, about 120 MiB. Past it, members idle for
    /// ``idle`` seconds are dropped oldest first; when none is, a new key is refused (`503` with
    /// `Retry-After`).
    public var maxLive: Int
    /// Seconds a key the loader answered "no such key" for is remembered, so the loader (and the
    /// program's database) is not asked about it again in a loop. The default, 10, is short enough that a
    /// user created a moment later finds their feed soon.
    public var notFoundMemory: Double
    /// Seconds the loader may take before its use fails (a 5xx naming the feed; the host enforces it, the
    /// ``FamilyRoster`` only hears that the load failed). The default, 10, is the server's header
    /// timeout: a loader slower than that is a database in trouble.
    public var loaderTimeout: Double

    /// Limits with the documented defaults, any of them set.
    public init(idle: Double = 60, maxLive: Int = 10_000, notFoundMemory: Double = 10, loaderTimeout: Double = 10) {
        self.idle = idle
        self.maxLive = maxLive
        self.notFoundMemory = notFoundMemory
        self.loaderTimeout = loaderTimeout
    }

    /// What is wrong with these limits, or nil when nothing is: times must be finite and not negative
    /// (the loader timeout positive), and at least one member must be allowed.
    public var problem: String? {
        if !(idle.isFinite && idle >= 0) { return "the idle time must be a finite number of seconds, 0 or more (got \(idle))" }
        if maxLive < 1 { return "a family must allow at least one live member (got \(maxLive))" }
        if !(notFoundMemory.isFinite && notFoundMemory >= 0) {
            return "the time a missing key is remembered must be a finite number of seconds, 0 or more (got \(notFoundMemory))"
        }
        if !(loaderTimeout.isFinite && loaderTimeout > 0) { return "the loader timeout must be a finite number of seconds above 0 (got \(loaderTimeout))" }
        return nil
    }
}
