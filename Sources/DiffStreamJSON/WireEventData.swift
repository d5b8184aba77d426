import DiffStream

/// The data of one event of a feed's event stream (docs/protocol.md, "The event stream"), read by
/// ``WireCodec/decodeEventData(_:carrying:)`` in one pass: the members an event may carry, and for a
/// snapshot or a batch its body.
///
/// `{"feed":"home","history":"9f86d081884c7d65","from":7,"version":8,"ops":[…]}` reads as `feed`
/// `"home"`, `from` 7, `version` 8 and a ``WireBatch``. A member that is missing or not of its type
/// (`"version":"8"`, `"feed":null`) is nil: what that means is the reader's caller's to say.
public struct WireEventData: Equatable, Sendable {
    /// What the data is expected to carry besides its members.
    public enum Content: Equatable, Sendable {
        /// `sections`, as `event: snapshot` has.
        case snapshot
        /// `ops`, as `event: batch` has.
        case batch
        /// Nothing (`deleted`, `unauthorized`, `unavailable`…): `sections` and `ops` are read, checked
        /// and ignored, and data that is not an object reads as no members.
        case none
    }

    /// What the data carries besides its members.
    public enum Body: Equatable, Sendable {
        /// The snapshot of `sections`.
        case snapshot(WireSnapshot)
        /// The batch of `ops`.
        case batch(WireBatch)
        /// Nothing was asked for.
        case none
    }

    /// `feed`, if it is a string.
    public var feed: String?
    /// `history`, if it is a string.
    public var history: String?
    /// `from`, if it is a number whose value (as a `Double`) is an integer that `Int` holds.
    public var from: Int?
    /// `version`, if it is a number whose value (as a `Double`) is an integer that `Int` holds.
    public var version: Int?
    /// `error`, if it is a string.
    public var error: String?
    /// `detail`, if it is a string.
    public var detail: String?
    /// The body that was asked for, or why it could not be read (the first problem in document order).
    public var body: Result<Body, WireError>

    /// Data with the given members.
    public init(feed: String? = nil, history: String? = nil, from: Int? = nil, version: Int? = nil,
                error: String? = nil, detail: String? = nil, body: Result<Body, WireError>) {
        self.feed = feed
        self.history = history
        self.from = from
        self.version = version
        self.error = error
        self.detail = detail
        self.body = body
    }

    /// The members of an event's data read from a tree, as the fast reader reads them.
    init(members value: JSONValue, body: Result<Body, WireError>) {
        self.init(
            feed: value["feed"]?.stringValue, history: value["history"]?.stringValue,
            from: value["from"]?.numberValue.flatMap { Int(exactly: $0) },
            version: value["version"]?.numberValue.flatMap { Int(exactly: $0) },
            error: value["error"]?.stringValue, detail: value["detail"]?.stringValue, body: body)
    }

    /// The snapshot the data carries.
    /// - Throws: why it could not be read; a shape error if the data was not read for a snapshot.
    public func snapshot() throws(WireError) -> WireSnapshot {
        switch body {
        case .success(.snapshot(let snapshot)): return snapshot
        case .failure(let error): throw error
        default: throw .shape(path: "sections", expected: "an array")
        }
    }

    /// The batch the data carries.
    /// - Throws: why it could not be read; a shape error if the data was not read for a batch.
    public func batch() throws(WireError) -> WireBatch {
        switch body {
        case .success(.batch(let batch)): return batch
        case .failure(let error): throw error
        default: throw .shape(path: "ops", expected: "an array")
        }
    }
}
