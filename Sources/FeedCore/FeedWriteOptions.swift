/// What a write carries beyond its content, for a shared store.
public struct FeedWriteOptions: Sendable, Equatable {
    /// The write's id: a client's `Idempotency-Key`. A shared store commits one id once; a retry gets
    /// the first answer. Nil: one is drawn.
    public var writeID: String?
    /// A lease's fencing token (a hosted view model's source, run on one instance at a time): the
    /// store refuses the write once another instance holds the lease.
    public var fence: String?
    /// The version and view-model state the change was computed from: the store must still hold
    /// them, else ``FeedWriteError/conflict`` (compute again). Nil: the write is a whole snapshot,
    /// which the feed diffs again against whatever version won.
    public var basis: FeedBasis?
    /// A digest of the request that sent ``writeID`` (``RequestDigest``), kept with its answer: a later
    /// request with the same key and another digest is refused (``FeedWriteError/idempotencyKeyReused``)
    /// instead of getting the first answer. Nil: a digest of the snapshot written (a `PUT`).
    public var request: String?

    public init(writeID: String? = nil, fence: String? = nil, basis: FeedBasis? = nil, request: String? = nil) {
        self.writeID = writeID
        self.fence = fence
        self.basis = basis
        self.request = request
    }
}

/// A feed's version and view-model state (nil: none stored).
public struct FeedBasis: Sendable, Equatable {
    public var version: Int
    public var state: [UInt8]?
    public init(version: Int, state: [UInt8]?) {
        self.version = version
        self.state = state
    }
}
