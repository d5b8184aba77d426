import FeedStore
import Logging
import Synchronization

/// The right to run a hosted view model's source on one instance of several sharing a store: a
/// lease in the store (Redis: `lease:<name>`, `SET NX PX`) under a fencing token that every commit of
/// the source carries, renewed while held (docs/decisions/0003-redis.md).
///
/// An instance starts reading the source when it first holds the lease (``untilFirstHeld()``), so
/// the others do not run it; from then on it applies its elements only while it holds the lease
/// (``token``), and keeps reading between: losing the lease and taking it again never ends the
/// source itself (an `AsyncStream` cannot be read twice).
final class SharedLease: Sendable {
    /// How long a lease lasts unless renewed: another instance takes over about this long after the
    /// holder stopped renewing (it died, or stalls).
    static let milliseconds = 5_000
    /// How often the holder renews, and how often the others try to take it.
    static let interval: Duration = .seconds(1)

    let name: String
    let store: any SharedFeedStore
    let logger: Logger
    private let held = Mutex<String?>(nil)
    /// Whether this instance has held the lease, and the tasks waiting for that (by a number each).
    private let first = Mutex<(held: Bool, next: Int, waiting: [Int: CheckedContinuation<Void, Never>])>((false, 0, [:]))

    init(name: String, store: any SharedFeedStore, logger: Logger) {
        self.name = name
        self.store = store
        self.logger = logger
    }

    /// The fencing token while this instance holds the lease, else nil.
    var token: String? { held.withLock { $0 } }

    /// Returns once this instance has held the lease (at once if it has before), or once the task is
    /// cancelled.
    func untilFirstHeld() async {
        let number = first.withLock { state in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = first.withLock { state -> Bool in
                    if state.held || Task.isCancelled { return true }
                    state.waiting[number] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            first.withLock { $0.waiting.removeValue(forKey: number) }?.resume()
        }
    }

    private func acquired(_ token: String) {
        held.withLock { $0 = token }
        let waiting = first.withLock { state in
            state.held = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    /// A commit under `token` was refused (another holds the lease): it is not held any more.
    func lost(_ token: String) {
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
    func keep() async {
        while !Task.isCancelled {
            if let token {
                let renewed = (try? await store.renewLease(name, token: token, milliseconds: Self.milliseconds)) ?? true
                if !renewed { lost(token) }
            } else if let token = try? await store.acquireLease(name, milliseconds: Self.milliseconds) {
                acquired(token)
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
