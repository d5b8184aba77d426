#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Seconds on the wall clock: the time of day as seconds since 1970 (UTC), for what must name a moment
/// other programs and people read (a token's `iat` and `exp`, the stamp in a set-aside file's name).
/// It can jump (an operator or NTP sets it), so never measure a duration or a deadline with it: that is
/// ``MonotonicClock``'s job.
public enum WallClock {
    /// Seconds since 1970-01-01 00:00:00 UTC, with the nanoseconds as the fraction.
    ///
    /// Read with `clock_gettime(CLOCK_REALTIME)`, the clock Foundation's `Date()` reads too, with no
    /// Foundation: this module depends on Dispatch and the C library only.
    public static func now() -> Double {
        var time = timespec()
        _ = clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}
