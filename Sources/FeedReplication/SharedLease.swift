import FeedStorage
import Logging
import Synchronization

/// The right to run a hosted view model's source on one instance of several sharing a store: a
/// lease in the shared store (Redis: `lease:<name>`, `SET NX PX`) under a fencing token that every commit of
/// the source carries, renewed while held (docs/decisions/0003-redis.md).
///
/// The source is read on every instance, and its elements are applied only where the lease is held
/// (``token``); so losing the lease and taking it again never ends the source itself.
package final class SharedLease: Sendable {
    /// How long a lease lasts unless renewed: another instance takes over about this long after the
    /// holder stopped renewing (it died, or stalls).
    package static let milliseconds = 5_000
    /// How often the holder renews, and how often the others try to take it.
    package static let interval: Duration = .seconds(1)

    package let name: String
    package let store: any FeedLeases
    package let logger: Logger
    private let held = Mutex<String?>(nil)

    package init(name: String, store: any FeedLeases, logger: Logger) {
        self.name = name
        self.store = store
        self.logger = logger
    }

    /// The fencing token while this instance holds the lease, else nil.
    package var token: String? { held.withLock { $0 } }

    /// A commit under `token` was refused (another holds the lease): it is not held any more.
    package func lost(_ token: String) {
        let was = held.withLock { current -> Bool in
            guard current == token else { return false }
            current = nil
            return true
        }
        if was { logger.warning("lease \(name): lost") }
    }

    /// Takes the lease whenever no one holds it and renews it while held, every ``interval``, until
    /// the task is cancelled; then gives it up. A renewal that fails (expired, taken by another)
    /// drops it; a Redis that cannot be reached leaves the decision to the lease's expiry (the fencing
    /// token guards the commits meanwhile).
    package func keep() async {
        while !Task.isCancelled {
            if let token {
                let renewed = (try? await store.renewLease(name, token: token, milliseconds: Self.milliseconds)) ?? true
                if !renewed { lost(token) }
            } else if let acquired = try? await store.acquireLease(name, milliseconds: Self.milliseconds) {
                held.withLock { $0 = acquired }
                logger.info("lease \(name): acquired")
            }
            try? await Task.sleep(for: Self.interval)
        }
        if let token {
            held.withLock { $0 = nil }
            try? await store.releaseLease(name, token: token)
            logger.info("lease \(name): released")
        }
    }
}
