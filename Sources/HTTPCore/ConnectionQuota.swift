import Synchronization

/// Who may connect: the global connection cap and the per-address cap, as a pure value. The server
/// keeps one in a ``SharedConnectionQuota`` so that every event loop counts against the same numbers.
///
/// A connection that is admitted must be ``release(address:)``d exactly once when it closes. One that is
/// refused is not counted: it is answered 503 (with a lingering close) outside the caps, up to
/// `refusalSlack` such answers at a time; past that it is closed without an answer.
package struct ConnectionQuota: Sendable, Equatable {
    package enum Verdict: Equatable, Sendable {
        case admit
        /// The server is at `maxConnections`.
        case refuseServerFull
        /// This address is at `maxPerAddress`.
        case refuseAddressFull
        /// Far over a cap: not even a 503.
        case drop
    }

    /// The most connections overall.
    package var maxConnections: Int
    /// The most connections from one address; 0 turns the per-address cap off.
    package var maxPerAddress: Int
    /// How many refused connections may be answered 503 at once.
    package var refusalSlack = 64
    package private(set) var open = 0
    package private(set) var refusing = 0
    package private(set) var perAddress: [String: Int] = [:]

    package init(maxConnections: Int, maxPerAddress: Int) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress
    }

    /// Decides on a new connection from `address` (a numeric host, no port) and counts it if admitted.
    /// A refused one that is answered is counted in `refusing` until ``releaseRefused()``.
    /// - Complexity: O(1) on average.
    package mutating func admit(address: String) -> Verdict {
        let verdict: Verdict
        if open >= maxConnections {
            verdict = .refuseServerFull
        } else if maxPerAddress > 0 && perAddress[address, default: 0] >= maxPerAddress {
            verdict = .refuseAddressFull
        } else {
            open += 1
            if maxPerAddress > 0 { perAddress[address, default: 0] += 1 }
            return .admit
        }
        if refusing >= refusalSlack { return .drop }
        refusing += 1
        return verdict
    }

    /// An admitted connection from `address` has closed.
    package mutating func release(address: String) {
        open = max(0, open - 1)
        guard maxPerAddress > 0, let count = perAddress[address] else { return }
        perAddress[address] = count > 1 ? count - 1 : nil
    }

    /// A refused connection that was being answered has closed.
    package mutating func releaseRefused() {
        refusing = max(0, refusing - 1)
    }

    /// The connections open from `address`.
    package func count(from address: String) -> Int { perAddress[address, default: 0] }
}

/// A ``ConnectionQuota`` shared by every event loop of a server.
package final class SharedConnectionQuota: Sendable {
    private let quota: Mutex<ConnectionQuota>

    package init(_ quota: ConnectionQuota) { self.quota = Mutex(quota) }

    package func admit(address: String) -> ConnectionQuota.Verdict { quota.withLock { $0.admit(address: address) } }
    package func release(address: String) { quota.withLock { $0.release(address: address) } }
    package func releaseRefused() { quota.withLock { $0.releaseRefused() } }
    var open: Int { quota.withLock { $0.open } }
}
