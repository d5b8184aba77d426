import FeedCore
import ViewModelHosting
import CoreMetrics
import DiffStreamJSON
import HTTPCore
import Metrics
import Presence

/// The multi-feed stream's policy (`GET /events?feed=…`): which feeds a stream may carry, and the
/// answer when none may.
extension FeedAPI {
    /// `GET /events?feed=A&feed=B@ID…`: many feeds on one stream (see ``MultiFeedRequest`` and
    /// ``FeedMultiplexer``; each feed's slots share its ``TaggedFanOut``). Each feed is checked on its own: one refused, missing or deleted ends only
    /// its own part (`event: forbidden`, `unauthorized`, `notfound`, `deleted`). Only when every feed
    /// is refused does the request get a plain status: `401` if any needs a token and none was sent,
    /// else `403` if any is forbidden, else `404`.
    func subscribeMany(_ request: HTTPRequest) async throws(APIError) -> HTTPResponse {
        let listed = try MultiFeedRequest(request, limit: options.maxStreamFeeds)
        let names = listed.entries.map(\.feed)
        let principal: Principal, decisions: [AuthorizationDecision]
        // A presence feed (issue 55) is read with the rights of the feed it stands for.
        let presenceTargets = names.map { presenceTarget(of: $0) }
        let rightsNames = zip(names, presenceTargets).map { name, target in target?.feed ?? name }
        switch await authorizer.authorizeSubscriptions(to: rightsNames, headers: request.headers, query: request.query, now: options.now()) {
        case .failure(let invalid):
            var error = APIError(.unauthorized, "unauthorized", invalid.detail)
            error.challenge = "Bearer realm=\"diffstream\", error=\"invalid_token\""  // RFC 6750 §3.1
            throw error
        case .success(let decided):
            (principal, decisions) = decided
        }
        let allowed = zip(zip(listed.entries, decisions), presenceTargets).compactMap { pair, target in
            if case .allow = pair.1, target == nil { pair.0.feed } else { nil }
        }
        // Family members are made first (after authorization); one the family refuses is not found.
        var refusedMembers: [String: ViewModelError] = [:]
        for name in allowed where hosted?.family(of: name) != nil {
            do { try await hosted?.prepare(name) } catch { refusedMembers[name] = error }
        }
        var found = await registry.read(allowed).makeIterator()
        var opened: [(entry: MultiFeedRequest.Entry, outcome: MultiFeedOutcome)] = []
        for ((entry, decision), target) in zip(zip(listed.entries, decisions), presenceTargets) {
            switch decision {
            case .allow:
                if let target {
                    opened.append((entry, .presence(target.feed, identities: target.identities)))
                    continue
                }
                switch found.next() {
                case _ where refusedMembers[entry.feed] != nil: opened.append((entry, .notFound))
                case .success(let feed?)?: opened.append((entry, .open(feed)))
                case .failure(let error)?: opened.append((entry, .unavailable(error.description)))
                case .success(nil)?, nil: opened.append((entry, .notFound))
                }
            case .unauthorized(let detail, _): opened.append((entry, .unauthorized(detail)))
            case .forbidden(let detail): opened.append((entry, .forbidden(detail)))
            }
        }
        if !opened.contains(where: { switch $0.outcome { case .open, .presence: true; default: false } }) {
            throw Self.everyFeedRefused(opened.map { ($0.entry.feed, $0.outcome) })
        }
        // Who is here (issue 55): each slot of a feed with presence makes the stream's user present on it.
        let joining = opened.contains(where: { if case .open = $0.outcome { presenceSettings(of: $0.entry.feed) != nil } else { false } })
            ? try await presenceConnection(request, principal: principal) : nil
        let expires: Double? = if case .token(let rights) = principal { rights.expires } else { nil }
        let now = options.now
        var response = HTTPResponse(status: .ok, headers: [
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        ]) { [announcement, opened, taggedFeeds, hosted, presence, self] stream in
            let multiplexer = FeedMultiplexer(stream)
            multiplexer.send(announcement)
            Task { [registry] in
                for (entry, outcome) in opened {
                    switch outcome {
                    case .open(let feed):
                        let slot = multiplexer.makeSlot(feed: entry.feed)
                        await taggedFeeds.join(slot, to: registry.current(feed), lastEventID: entry.position)
                        if let hosted, hosted.family(of: entry.feed) != nil {
                            await hosted.joined(entry.feed)
                            slot.onTermination { Task { await hosted.left(entry.feed) } }
                        }
                        if let joining { await joinPresence(entry.feed, joining, until: slot) }
                    case .presence(let target, let identities):
                        guard let presence else { continue }
                        // Following presence makes no one present; it keeps the presence feed until it ends.
                        // Past --max-presence-feeds a presence feed not held is refused as not found (now).
                        guard let feed = await presence.watch(target, identities: identities) else {
                            multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("notfound", feed: entry.feed, error: "not found", detail: presenceRefusal(entry.feed))))
                            continue
                        }
                        let slot = multiplexer.makeSlot(feed: entry.feed)
                        slot.onTermination { Task { await presence.unwatch(target) } }
                        await taggedFeeds.join(slot, to: feed, lastEventID: entry.position)
                    case .notFound:
                        multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("notfound", feed: entry.feed, error: "not found", detail: "no feed named \(entry.feed)")))
                    case .forbidden(let detail):
                        multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("forbidden", feed: entry.feed, error: "forbidden", detail: detail)))
                    case .unauthorized(let detail):
                        multiplexer.refuse(EventPayload(FeedEvents.refusalEvent("unauthorized", feed: entry.feed, error: "token required", detail: detail)))
                    case .unavailable(let detail):
                        multiplexer.refuse(EventPayload(FeedEvents.unavailableEvent(feed: entry.feed, detail: detail)))
                    }
                }
                multiplexer.finishOpening()
                if let expires { Self.endAtExpiry(multiplexer, expires: expires, now: now) }
            }
        }
        response.logMetadata["feeds"] = "\(names.count)"
        return response
    }

    /// What happens to one listed feed of a multi-feed stream.
    enum MultiFeedOutcome: Sendable {
        case open(Feed), notFound, forbidden(String), unauthorized(String)
        /// The presence feed of a feed with presence (issue 55).
        case presence(String, identities: Bool)
        /// The shared store (Redis) cannot be reached to load the feed.
        case unavailable(String)
    }

    /// The plain status of a multi-feed request whose every feed is refused, with each feed's refusal.
    static func everyFeedRefused(_ outcomes: [(feed: String, outcome: MultiFeedOutcome)]) -> APIError {
        var error = everyFeedRefusedStatus(outcomes)
        error.feeds = outcomes.compactMap { feed, outcome in
            switch outcome {
            case .open, .presence: nil
            case .notFound: FeedRefusal(feed: feed, event: "notfound", error: "not found", detail: "no feed named \(feed)")
            case .forbidden(let detail): FeedRefusal(feed: feed, event: "forbidden", error: "forbidden", detail: detail)
            case .unauthorized(let detail): FeedRefusal(feed: feed, event: "unauthorized", error: "token required", detail: detail)
            case .unavailable(let detail): FeedRefusal(feed: feed, event: "unavailable", error: "redis unavailable", detail: detail)
            }
        }
        return error
    }

    static func everyFeedRefusedStatus(_ outcomes: [(feed: String, outcome: MultiFeedOutcome)]) -> APIError {
        func feeds(_ match: (MultiFeedOutcome) -> Bool) -> String {
            outcomes.filter { match($0.outcome) }.map { "'\($0.feed)'" }.joined(separator: ", ")
        }
        let unauthorized = feeds { if case .unauthorized = $0 { true } else { false } }
        if !unauthorized.isEmpty {
            return APIError(.unauthorized, "unauthorized", "these feeds are private: send a token ('Authorization: Bearer <token>', the \(Authorizer.cookieName) cookie or ?\(Authorizer.queryName)=); no token for \(unauthorized)")
        }
        let unavailable = outcomes.compactMap { if case .unavailable(let detail) = $0.outcome { detail } else { nil } }
        if let detail = unavailable.first {
            return APIError(.serviceUnavailable, "redis unavailable", detail)
        }
        let forbidden = feeds { if case .forbidden = $0 { true } else { false } }
        if !forbidden.isEmpty {
            return APIError(.forbidden, "forbidden", "this token may read none of the feeds listed; it may not read \(forbidden)")
        }
        return APIError(.notFound, "not found", "no feed named \(feeds { _ in true })")
    }

    /// Sends `event: unauthorized` for every feed still open and ends the multi-feed stream once its
    /// token has expired.
    static func endAtExpiry(_ multiplexer: FeedMultiplexer, expires: Double, now: @escaping @Sendable () -> Double) {
        let timer = Task {
            let seconds = expires - now()
            if seconds > 0 { try await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up)))) }
            multiplexer.end { EventPayload(FeedEvents.unauthorizedEvent(feed: $0)) }
        }
        multiplexer.sink.onTermination { timer.cancel() }
    }
}
