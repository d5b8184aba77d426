import FeedCore
import ViewModelHosting
import CoreMetrics
import DiffStreamJSON
import HTTPCore
import Metrics

/// The feeds as resources: the list (`GET /feeds`), a feed's document (`GET /feeds/{feed}`, with its
/// `ETag`), and the answers to writes.
extension FeedAPI {
    func listFeeds(as principal: Principal) async throws(APIError) -> [FeedListing] {
        let listed: [(name: String, version: Int)]
        do { listed = try await registry.list() } catch { throw APIError(readError: error) }
        // A family is listed once (its members are every user's feeds, not a list to show).
        var entries = listed.filter { hosted?.family(of: $0.name) == nil && authorizer.mayRead($0.name, as: principal) }.map { entry in
            guard let host = hosted?.hosted(entry.name) else {
                return FeedListing(feed: entry.name, version: entry.version, kind: "snapshot")
            }
            return FeedListing(feed: entry.name, version: entry.version, kind: "viewModel", patch: host.acceptsPatch,
                               actions: host.actionList.map(ActionListing.init))
        }
        for family in hosted?.hostedFamilies ?? [] where authorizer.mayList(family: family.prefix, as: principal) {
            entries.append(FeedListing(feed: family.prefix + ".*", version: nil, kind: "family", family: family.prefix, live: await family.liveCount,
                                       patch: family.acceptsPatch && family.truth == .kept, actions: family.actionList.map(ActionListing.init)))
        }
        for index in entries.indices where entries[index].kind != "family" { entries[index].presence = presenceName(of: entries[index].feed) }
        entries.sort { $0.feed < $1.feed }  // the list is sorted by name, families among the feeds
        return entries
    }

    /// `GET /feeds/{feed}`: the document with its position as a strong `ETag`, the event id quoted
    /// (the gzip variant's tag is the server's to add, ``EntityTag/gzipVariant(of:)``); `304` when
    /// `If-None-Match` names the tag of a representation this request may get (RFC 9110 §13.1.2): the
    /// gzip one only when the client takes gzip. The 304 carries that tag and the 200's `Vary` (§15.4.5).
    /// - Parameter acceptsGzip: compression is on and the request's `Accept-Encoding` takes gzip.
    package static func document(_ read: (id: EventID, json: [UInt8]), ifNoneMatch: String?, acceptsGzip: Bool) -> HTTPResponse {
        let tag = "\"\(read.id)\""
        let current = acceptsGzip ? [tag, EntityTag.gzipVariant(of: tag)] : [tag]
        if let ifNoneMatch, let held = EntityTag.match(ifNoneMatch: ifNoneMatch, among: current) {
            return HTTPResponse(status: .notModified, headers: ["ETag": held, "Cache-Control": "no-cache", "Vary": "Accept-Encoding"])
        }
        var response = HTTPResponse.json(read.json + [0x0A])
        response.headers.set("ETag", tag)
        response.headers.set("Cache-Control", "no-cache")
        return response
    }

    /// A JSON body from an `Encodable` value, keys in the order it encodes them, and a newline.
    package static func json(_ body: some Encodable, status: HTTPStatus = .ok) -> HTTPResponse {
        do {
            return .json(try JSONValueEncoder().encodeBytes(body, terminator: "\n"), status: status)
        } catch {
            return APIError(.internalServerError, "not encodable", "the response could not be written as JSON: \(error)").response
        }
    }

    /// The answer to a change a hosted view model took (a `PATCH` or an action): `200` with
    /// `{"feed":"todo","version":3,"ops":1}`. Public so that the testing product answers as the API does.
    public static func acknowledgement(feed: String, _ result: ChangeResult) -> HTTPResponse {
        acknowledgement(feed: feed, version: result.version, ops: result.operations, status: .ok)
    }

    /// `{"feed":"news","version":2,"ops":3}` and a newline: what a write answers. Written directly, not
    /// through `Encodable`: it is on the hot path of every write (an encoder's machinery cost a
    /// durable PUT several thousand instructions).
    package static func acknowledgement(feed: String, version: Int, ops: Int, status: HTTPStatus) -> HTTPResponse {
        var writer = JSONWriter(capacity: 48 + feed.utf8.count)
        writer.raw("{\"feed\":")
        writer.write(feed)
        writer.raw(",\"version\":")
        writer.write(version)
        writer.raw(",\"ops\":")
        writer.write(ops)
        writer.raw("}\n")
        return .json(writer.bytes, status: status)
    }

    /// `GET /readyz`: whether this instance can serve writes and fresh reads now (with Redis: whether
    /// it answers, checked now), for load balancers. `/healthz` stays liveness.
    func readiness() async -> HTTPResponse {
        guard registry.shared != nil else { return .json(Array("{\"status\":\"ready\"}\n".utf8)) }
        guard let problem = await registry.readiness() else { return .json(Array("{\"status\":\"ready\",\"redis\":\"ok\"}\n".utf8)) }
        var writer = JSONWriter()
        writer.raw("{\"status\":\"unavailable\",\"redis\":")
        writer.write(problem)
        writer.raw("}\n")
        return HTTPResponse(status: .serviceUnavailable, headers: ["Content-Type": "application/json"], body: writer.bytes)
    }
}
