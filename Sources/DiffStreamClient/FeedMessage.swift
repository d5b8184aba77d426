import DiffStream
import DiffStreamJSON

/// An event of a DiffStream event stream, decoded from its SSE form (docs/protocol.md, "The event stream").
enum FeedMessage: Sendable {
    /// `event: snapshot`: the feed's whole state.
    case snapshot(feed: String, history: String?, version: Int, snapshot: WireSnapshot, id: String)
    /// `event: batch`: the operations from `from` to `version`.
    case batch(feed: String, history: String?, from: Int, version: Int, batch: WireBatch, id: String)
    /// `event: deleted`.
    case deleted(feed: String)
    /// `event: unauthorized`, `forbidden` or `notfound` (multi-feed route, or token expiry).
    case refused(feed: String, kind: RefusalKind, error: String, detail: String)
    /// `event: unavailable` (no id): the server cannot reach its store (Redis) for this feed; what the
    /// client holds stays valid but may fall behind. Carries no position.
    case unavailable(feed: String, detail: String)
    /// `event: available` (no id): the store is back; what the feed missed follows (batches or a snapshot).
    case available(feed: String)
    /// An event this client does not know (a newer server); ignored.
    case unknown(type: String)

    enum RefusalKind: Sendable { case unauthorized, forbidden, notFound }

    /// Why an event could not be read.
    struct DecodeError: Error, Sendable, CustomStringConvertible {
        var event: String
        var reason: String
        var description: String { "\(event) event: \(reason)" }
    }

    /// Decodes an event. `id` is the event's own id (from the SSE last event ID buffer).
    /// `defaultFeed` names the feed of a single-feed stream whose data lacks `feed`.
    ///
    /// The data is read once, by ``WireCodec/decodeEventData(_:carrying:)``, straight from the string's
    /// UTF-8 bytes: a snapshot's or a batch's models are kept exactly as the server wrote them.
    static func decode(_ event: SSEEvent, defaultFeed: String?) throws(DecodeError) -> FeedMessage {
        func fail(_ reason: String) -> DecodeError { DecodeError(event: event.type, reason: reason) }
        switch event.type {
        case "snapshot":
            let data: WireEventData
            do { data = try WireCodec.decodeEventData(event.data.utf8, carrying: .snapshot) } catch { throw fail(error.description) }
            guard let feed = data.feed ?? defaultFeed else { throw fail("no feed") }
            guard let version = data.version else { throw fail("no version") }
            let snapshot: WireSnapshot
            do { snapshot = try data.snapshot() } catch { throw fail(error.description) }
            return .snapshot(feed: feed, history: data.history, version: version, snapshot: snapshot, id: event.lastEventID)
        case "batch":
            let data: WireEventData
            do { data = try WireCodec.decodeEventData(event.data.utf8, carrying: .batch) } catch { throw fail(error.description) }
            guard let feed = data.feed ?? defaultFeed else { throw fail("no feed") }
            guard let from = data.from, let version = data.version else { throw fail("no from or version") }
            let batch: WireBatch
            do { batch = try data.batch() } catch { throw fail(error.description) }
            return .batch(feed: feed, history: data.history, from: from, version: version, batch: batch, id: event.lastEventID)
        case "deleted", "unauthorized", "forbidden", "notfound":
            let data = try? WireCodec.decodeEventData(event.data.utf8, carrying: .none)
            guard let feed = data?.feed ?? defaultFeed else { throw fail("no feed") }
            let error = data?.error ?? event.type
            let detail = data?.detail ?? ""
            switch event.type {
            case "deleted": return .deleted(feed: feed)
            case "unauthorized": return .refused(feed: feed, kind: .unauthorized, error: error, detail: detail)
            case "forbidden": return .refused(feed: feed, kind: .forbidden, error: error, detail: detail)
            default: return .refused(feed: feed, kind: .notFound, error: error, detail: detail)
            }
        case "unavailable", "available":
            let data = try? WireCodec.decodeEventData(event.data.utf8, carrying: .none)
            guard let feed = data?.feed ?? defaultFeed else { throw fail("no feed") }
            if event.type == "available" { return .available(feed: feed) }
            return .unavailable(feed: feed, detail: data?.detail ?? data?.error ?? "")
        default:
            return .unknown(type: event.type)
        }
    }
}
