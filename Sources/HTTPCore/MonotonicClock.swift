import Dispatch

/// Seconds on the monotonic clock: the one clock every deadline, timeout and duration of the server
/// and the feeds is measured on (the pure state machines take it injected, as `now`).
public enum MonotonicClock {
    /// Seconds since an arbitrary fixed point (the machine's boot); never goes back.
    @inline(__always)
    public static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}
