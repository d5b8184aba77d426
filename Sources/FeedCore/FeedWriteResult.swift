/// What a write did.
public struct FeedWriteResult: Sendable, Equatable {
    /// The write created the feed.
    public var created: Bool
    /// The version the feed is at after it.
    public var version: Int
    /// The operations of its batch (0: the snapshot did not change, no new version).
    public var operations: Int
    /// A shared store had committed this write id before: this is that write's answer, and nothing
    /// was written now.
    public var replayed = false

    public init(created: Bool, version: Int, operations: Int, replayed: Bool = false) {
        self.created = created
        self.version = version
        self.operations = operations
        self.replayed = replayed
    }

    /// As a shared store keeps it with the write id: `<created 0|1> <version> <operations> [<request>]`,
    /// where `request` is the ``FeedWriteOptions/request`` digest of the request that used the key.
    package func answer(request: String?) -> [UInt8] {
        Array("\(created ? 1 : 0) \(version) \(operations)\(request.map { " " + $0 } ?? "")".utf8)
    }

    /// The first answer of a write id committed before, kept by a shared store, as a retry gets it.
    /// - Throws: ``FeedWriteError/idempotencyKeyReused`` when the answer was kept for another request
    ///   than `request` (both digests known and different).
    package init(replaying answer: [UInt8], version: Int, request: String?) throws(FeedWriteError) {
        let kept = Self.parse(answer)
        if let request, let first = kept?.request, first != request { throw .idempotencyKeyReused }
        self = kept?.result ?? FeedWriteResult(created: false, version: version, operations: 0)
        replayed = true
    }

    /// The answer a shared store kept and the request digest kept with it; nil when it is not one.
    package static func parse(_ answer: [UInt8]) -> (result: FeedWriteResult, request: String?)? {
        let parts = String(decoding: answer, as: UTF8.self).split(separator: " ")
        guard parts.count == 3 || parts.count == 4, let created = Int(parts[0]), let version = Int(parts[1]), let operations = Int(parts[2]) else { return nil }
        return (FeedWriteResult(created: created == 1, version: version, operations: operations), parts.count == 4 ? String(parts[3]) : nil)
    }
}
