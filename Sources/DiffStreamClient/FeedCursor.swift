import DiffStream
import DiffStreamJSON

/// What one feed's client holds, and the rule for each event that arrives for it: a pure state machine.
///
/// Never a silent gap (docs/protocol.md, "Resuming"): a batch applies only when its `history` is the one
/// held and its `from` is the version held. A batch of the same history with `version <= held` is a
/// duplicate and is skipped. Anything else (a later `from`, another history, a batch straddling the
/// version held, or one that does not apply) is a gap: the position is dropped and the caller resyncs
/// (reconnects without a position; a snapshot follows).
///
/// Versions only move forward within a history (issue 25): a snapshot of the history held at a lower
/// version than the one held is stale (a copy behind the one read before) and is skipped.
struct FeedCursor: Sendable {
    /// The snapshot held (`nil` before the first snapshot).
    private(set) var snapshot: WireSnapshot?
    private(set) var history: String?
    private(set) var version: Int?
    /// The id to resume from (`nil`: ask for a snapshot).
    private(set) var eventID: String?
    /// Whether what is held came from the offline cache and no live event confirmed it yet.
    private(set) var isStale = false
    /// Whether the feed was deleted since the snapshot held (then dropped): its next snapshot is of a
    /// new history (a feed created again starts one).
    private(set) var wasDeleted = false

    init() {}

    /// A cursor restored from the offline cache: it resumes from `eventID`.
    init(cached snapshot: WireSnapshot, history: String?, version: Int, eventID: String) {
        self.snapshot = snapshot
        self.history = history
        self.version = version
        self.eventID = eventID
        isStale = true
    }

    /// What an event did to the cursor.
    enum Outcome: Equatable, Sendable {
        /// A whole snapshot was taken (the first one, a resync, or a new history).
        case snapshot(FullReason)
        /// A batch was applied.
        case applied
        /// A batch already held (replayed twice); nothing changed.
        case duplicate
        /// A snapshot of the history held at a lower version than the one held: skipped, nothing changed.
        case stale
        /// A gap; the position was dropped.
        case gap(String)
    }

    /// Takes a whole snapshot, unless it is of the history held at a lower version (``Outcome/stale``).
    mutating func receiveSnapshot(_ snapshot: WireSnapshot, history: String?, version: Int, eventID: String) -> Outcome {
        if self.snapshot != nil, let history, history == self.history, let held = self.version, version < held {
            return .stale
        }
        let reason: FullReason
        if wasDeleted {
            reason = .newHistory
        } else if self.snapshot == nil {
            reason = .first
        } else if let history, let held = self.history, history != held {
            reason = .newHistory
        } else {
            reason = .resync
        }
        self.snapshot = snapshot
        self.history = history
        self.version = version
        self.eventID = eventID.isEmpty ? nil : eventID
        isStale = false
        wasDeleted = false
        return .snapshot(reason)
    }

    /// Applies a batch if it follows what is held.
    mutating func receiveBatch(_ batch: WireBatch, history: String?, from: Int, version: Int, eventID: String) -> Outcome {
        guard var snapshot, let held = self.version else { return drop("a batch before any snapshot") }
        if let history, let heldHistory = self.history, history != heldHistory {
            return drop("a batch of another history (\(history), holding \(heldHistory))")
        }
        if version <= held, from < version { return .duplicate }
        guard from == held, version > from else {
            return drop("a batch from version \(from) to \(version) while holding \(held)")
        }
        do { try snapshot.apply(batch) } catch { return drop("a batch that does not apply: \(error.description)") }
        self.snapshot = snapshot
        self.version = version
        if let history { self.history = history }
        self.eventID = eventID.isEmpty ? nil : eventID
        isStale = false
        return .applied
    }

    /// Forgets the position (not the snapshot, which stays the app's until the next snapshot replaces it),
    /// so that the next connection asks for a snapshot.
    mutating func forgetPosition() {
        eventID = nil
    }

    /// The feed was deleted: forgets the snapshot and the position. When the feed appears again its
    /// snapshot is reported as ``FullReason/newHistory`` (a feed created again starts a new history).
    mutating func markDeleted() {
        self = FeedCursor()
        wasDeleted = true
    }

    /// The server resumed the feed at the cached position with nothing missed: what is held is current.
    mutating func confirm() {
        isStale = false
    }

    private mutating func drop(_ reason: String) -> Outcome {
        eventID = nil
        return .gap(reason)
    }
}

/// Why an update carries a whole snapshot.
public enum FullReason: String, Sendable, Hashable {
    /// The first snapshot of this feed on this client.
    case first
    /// A resync: after a gap, a reconnection past the replay window, or a slow stream caught up; or
    /// the offline cache's snapshot confirmed current (the server resumed the feed at its id with
    /// nothing missed).
    case resync
    /// The feed's history changed: it was deleted (``FeedEvent/deleted(feed:)``) and created again, or
    /// the server lost its data.
    case newHistory
    /// From the offline cache, before any live event: may be out of date.
    case cached
}
