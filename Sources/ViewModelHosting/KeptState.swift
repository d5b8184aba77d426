import CoreMetrics
import DiffStreamJSON
import FeedCore
import Foundation

/// The JSON form in which a hosted view model's state is kept with its feed (the log store, the member
/// store, Redis), and how it is read back by a program whose ``HostedViewModel/State`` may have changed.
///
/// The bytes are the state's own JSON object; from ``HostedViewModel/stateVersion`` 2 on, with the key
/// `"_stateVersion"` beside its fields (`{"_stateVersion":2,"done":false,…}`). A program of an earlier
/// release decodes them as it always did: synthesized `Decodable` ignores a key it does not know. Bytes
/// without the key are of version 1.
package enum KeptState {
    /// The top-level key that carries the version (reserved: a `State` has no field of that name).
    package static let versionKey = "_stateVersion"

    /// `bytes` (a state's JSON, as `JSONEncoder` writes it: no whitespace) with the version key first,
    /// from version 2 on; unchanged for version 1.
    /// - Throws: ``ViewModelError/stateNotEncodable(_:)`` when a versioned state is not a JSON object.
    package static func stamp(_ bytes: [UInt8], version: Int) throws(ViewModelError) -> [UInt8] {
        guard version > 1 else { return bytes }
        guard bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else {
            throw .stateNotEncodable("a State of stateVersion \(version) must encode as a JSON object, to carry its version")
        }
        var stamped = Array("{\"\(versionKey)\":\(version)".utf8)
        stamped.reserveCapacity(bytes.count + stamped.count + 1)
        if bytes.count > 2 { stamped.append(UInt8(ascii: ",")) }
        stamped.append(contentsOf: bytes.dropFirst())
        return stamped
    }

    /// The version kept bytes were written at: their `"_stateVersion"`, else 1.
    /// - Throws: the reason, when they are not JSON or carry a version that is not a whole number from 1.
    package static func version(of bytes: [UInt8]) throws(ViewModelError) -> Int {
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch { throw .malformedJSON("the kept bytes are not JSON: \(error.description)") }
        guard let stamp = value[versionKey] else { return 1 }
        guard case .number(let number) = stamp, number >= 1, number <= Double(Int32.max), number == number.rounded() else {
            throw .invalidField(field: versionKey, reason: "expected a whole number from 1")
        }
        return Int(number)
    }

    /// A decoding error in words: `todos[2].done: missing`.
    package static func describe(_ error: any Error) -> String {
        if let error = error as? DecodingError { return ActionInput.describe(error).description }
        if let error = error as? InvalidInput { return error.description }
        return "\(error)"
    }
}

extension ViewModelHost {
    /// The state kept as `bytes`, read by this program: decoded when they are of its
    /// ``HostedViewModel/stateVersion`` (or of a later one: a newer release's, read as the previous
    /// release reads them), migrated by ``HostedViewModel/migrate(from:_:)`` when they are of an earlier
    /// one. Nothing is written here.
    ///
    /// When they can be neither decoded nor migrated, the failure is logged at error level and counted
    /// (`diffstream_kept_state_unreadable_total`, labelled with `dimension`: the family, or the feed
    /// hosted on its own), and ``ViewModelError/keptStateUnreadable(feed:reason:)`` is thrown: the state
    /// is never replaced by another.
    package static func readKept(_ bytes: [UInt8], model: Model, feed: String, dimension: (String, String), registry: FeedRegistry) throws(ViewModelError) -> Model.State {
        let current = Model.stateVersion
        var reason: String
        do {
            let version = try KeptState.version(of: bytes)
            if version < current {
                do { return try model.migrate(from: version, bytes) } catch {
                    reason = "kept at state version \(version), and the view model's migration to version \(current) failed: \(KeptState.describe(error))"
                }
            } else {
                do { return try JSONDecoder().decode(Model.State.self, from: Data(bytes)) } catch {
                    reason = version == current
                        ? "it does not decode as the view model's State (version \(current)): \(KeptState.describe(error))"
                        : "kept at state version \(version) by a newer program, and it does not decode as this one's State (version \(current)): \(KeptState.describe(error))"
                }
            }
        } catch {
            reason = error.description
        }
        registry.sharingLogger.error("the state kept for feed \(feed) cannot be read, so it is left as it is and the feed is not made or changed: \(reason)",
                     metadata: dimension.0 == "feed" ? ["feed": .string(feed)] : ["feed": .string(feed), dimension.0: .string(dimension.1)])
        Counter(label: FamilyMetricName.keptStateUnreadable, dimensions: [dimension]).increment()
        throw .keptStateUnreadable(feed: feed, reason: reason)
    }
}

/// A hosted feed or a family, type-erased, whose kept state an operator can discard
/// (``HostedFeeds/resetKeptState(_:)``).
package protocol KeptStateResetting: Sendable {
    /// Discards the kept state: a hosted feed's (`key` nil) or the family member `key`'s.
    func resetKeptState(key: String?) async throws(ViewModelError)
}

extension ViewModelHost: KeptStateResetting {
    package func resetKeptState(key: String?) async throws(ViewModelError) {
        try await resetKeptState()
    }
}

extension ViewModelFamily: KeptStateResetting {
    package func resetKeptState(key: String?) async throws(ViewModelError) {
        guard let key else { return }
        try await delete(key)
    }
}
