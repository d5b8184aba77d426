import FeedStore
import Logging

/// The right to run a hosted view model's source on one instance of several sharing a store: a
/// lease in the store (Redis: `lease:<name>`, `SET NX PX`) under a fencing token that every commit of
/// the source carries, renewed while the source runs (docs/decisions/0003-redis.md).
struct SharedLease: Sendable {
    /// How long a lease lasts unless renewed: another instance takes over about this long after the
    /// holder stopped renewing (it died, or stalls).
    static let milliseconds = 5_000
    /// How often the holder renews, and how often the others try to take it.
    static let interval: Duration = .seconds(1)

    let name: String
    let store: any SharedFeedStore
    let logger: Logger

    /// Runs `body` with the lease's token whenever this instance holds the lease, until `body`
    /// returns true (its source ended: the lease is given up) or the task is cancelled. When a
    /// renewal fails or `body` returns false (a commit was refused: another holds the lease), `body`
    /// is cancelled and the lease is tried for again.
    func whileHeld(_ body: @escaping @Sendable (String) async throws -> Bool) async throws {
        while !Task.isCancelled {
            let token: String?
            do { token = try await store.acquireLease(name, milliseconds: Self.milliseconds) } catch { token = nil }
            guard let token else {
                try? await Task.sleep(for: Self.interval)
                continue
            }
            logger.info("lease \(name): acquired")
            let finished = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    do { return try await body(token) && !Task.isCancelled } catch { return !Task.isCancelled }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.interval)
                        if Task.isCancelled { return false }
                        let held: Bool
                        do { held = try await store.renewLease(name, token: token, milliseconds: Self.milliseconds) } catch { held = true }  // unreachable: the lease's expiry decides
                        if !held { return false }
                    }
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            if finished || Task.isCancelled {
                try? await store.releaseLease(name, token: token)
                if Task.isCancelled { logger.info("lease \(name): released") }
                return
            }
            logger.warning("lease \(name): lost")
        }
    }
}
