/// Seconds on the monotonic clock: the one clock every deadline, timeout and duration of the server
/// and the feeds is measured on (the pure state machines take it injected, as `now`).
public enum MonotonicClock {
    /// The first reading; every value is measured from it.
    private static let origin = ContinuousClock.now

    /// Seconds since a fixed point (this clock's first use); never goes back.
    @inline(__always)
    public static func now() -> Double {
        let (seconds, attoseconds) = origin.duration(to: .now).components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
