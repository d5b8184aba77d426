import Dispatch

/// Seconds on the monotonic clock: the one clock every deadline, timeout and duration is measured on,
/// in the server, the feeds, the store, the Redis client and the Swift client (the pure state machines
/// take it injected, as `now`). A module of its own with no dependency but Dispatch, so the client
/// products can use it on every platform they build for.
public enum MonotonicClock {
    /// Seconds since a fixed point (the machine's boot); never goes back.
    ///
    /// Read from `DispatchTime`, whose nanoseconds are one integer: about 120 instructions a reading
    /// under callgrind, against about 390 for `ContinuousClock.now` made into seconds (its `Duration`
    /// is a 128-bit count of attoseconds, and `components` divides it). A request reads the clock
    /// about 14 times.
    @inline(__always)
    public static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) * 1e-9
    }
}
