import Foundation

/// A value behind an `NSLock`, for the connection state that `cancel` (any thread) and the connection's
/// own thread share. `Synchronization.Mutex` would do, but it needs macOS 15, iOS 18, tvOS 18 and
/// watchOS 11, while the package declares macOS 14, iOS 15, tvOS 15 and watchOS 8; `NSLock` is on every
/// one of them and on Linux.
final class Locked<Value: Sendable>: @unchecked Sendable {  // every access to `value` holds `lock`
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` on the value with the lock held.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
