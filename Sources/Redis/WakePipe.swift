#if canImport(Glibc)
import Glibc
#endif

/// A pipe that wakes a thread blocked in `poll`: ``wake()`` from any thread writes a byte, the thread
/// polls its socket and the pipe's read end together (``poll(_:seconds:)``) and drains what was written.
/// The Redis client's and the subscriber's threads each have one.
struct WakePipe: Sendable {
    // The descriptors are set once; writing a byte to a pipe is safe from any thread, and only the
    // owning thread reads.
    private let readEnd: Int32, writeEnd: Int32

    /// Opens the pipe (its read end non-blocking). Should `pipe(2)` fail, both ends are -1: `poll`
    /// then ignores the pipe, and the owner is woken only by its socket or its timeout.
    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 { _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK) }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    /// Whether the pipe was made. Without it (`pipe(2)` failed: no descriptors left) nothing wakes a
    /// poll, so its owner must poll with a short timeout instead (``pollLimit``).
    var isOpen: Bool { readEnd >= 0 }

    /// The longest a poll may wait when ``isOpen`` is false: how late a wake-up can be noticed then.
    static let pollLimit = 0.01

    /// Wakes the thread in ``poll(_:seconds:)`` (or its next call returns at once).
    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Waits until `socket` is readable (-1: no socket), the pipe is woken, or `seconds` pass (nil:
    /// no limit; without the pipe, at most ``pollLimit``: the caller looks for work again, as after a
    /// wake-up); a wake-up is drained before returning.
    func poll(_ socket: Int32, seconds: Double?) -> (socket: Bool, wake: Bool) {
        let seconds = isOpen ? seconds : min(seconds ?? Self.pollLimit, Self.pollLimit)
        var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        let milliseconds = seconds.map { Int32(min(Double(Int32.max), max(0, ($0 * 1000).rounded(.up)))) } ?? -1
        guard Glibc.poll(&fds, 2, milliseconds) > 0 else { return (false, false) }
        let woken = fds[1].revents != 0
        if woken { drain() }
        return (socket >= 0 && fds[0].revents != 0, woken)
    }

    private func drain() {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &buffer, { read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// Closes both ends; call once, after the owning thread has ended.
    func close() {
        if readEnd >= 0 { _ = Glibc.close(readEnd) }
        if writeEnd >= 0 { _ = Glibc.close(writeEnd) }
    }
}
