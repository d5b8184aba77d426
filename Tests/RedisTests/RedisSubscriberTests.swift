import Foundation
import Testing
@testable import Redis
import TestSupport

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisSubscriberTests {
    /// A subscriber whose events arrive in an `AsyncStream`, awaited one by one.
    final class Events: Sendable {
        let stream: AsyncStream<RedisSubscriber.Event>
        let subscriber: RedisSubscriber

        init(url: RedisURL, pingInterval: Double = 1, timeout: Double = 2) {
            let (stream, continuation) = AsyncStream.makeStream(of: RedisSubscriber.Event.self)
            self.stream = stream
            subscriber = RedisSubscriber(url: url, timeout: timeout, pingInterval: pingInterval, reconnectDelay: 0.05) { continuation.yield($0) }
        }

        /// The next event that is not a disconnection or a confirmation (those are checked where they
        /// are expected).
        func next(skippingDisconnects: Bool = true, skippingConfirmations: Bool = true) async -> RedisSubscriber.Event? {
            for await event in stream {
                if case .disconnected = event, skippingDisconnects { continue }
                if case .confirmed = event, skippingConfirmations { continue }
                return event
            }
            return nil
        }
    }

    @Test func messagesArriveOnTheChannelsFollowed() async throws {
        try await RedisTestServer.with { server in
            let events = Events(url: server.url)
            defer { events.subscriber.stop() }
            #expect(await events.next() == .subscribed)  // nothing wanted yet
            events.subscriber.subscribe("a")
            #expect(await events.next(skippingConfirmations: false) == .confirmed(channel: "a"))
            let publisher = try RedisConnection(url: server.url, timeout: 2)
            #expect(try publisher.command(["PUBLISH", "a", "first"]) == .integer(1))
            #expect(await events.next() == .message(channel: "a", payload: Array("first".utf8)))
            _ = try publisher.command([Array("PUBLISH".utf8), Array("b".utf8), Array("ignored".utf8)])
            _ = try publisher.command([Array("PUBLISH".utf8), Array("a".utf8), [0, 10, 255]])
            #expect(await events.next() == .message(channel: "a", payload: [0, 10, 255]))
            events.subscriber.unsubscribe("a")
            #expect(try await eventually { try publisher.command(["PUBLISH", "a", "gone"]) == .integer(0) })
        }
    }

    /// `CLIENT KILL TYPE pubsub`: the subscriber connects again at once, with no outage to tell of (the
    /// new connection works), subscribes again (`confirmed`: its owner checks what it missed), and says
    /// `subscribed`.
    @Test func aKilledConnectionIsMadeAgainAtOnce() async throws {
        try await RedisTestServer.with { server in
            let events = Events(url: server.url)
            defer { events.subscriber.stop() }
            events.subscriber.subscribe("feed")
            #expect(await events.next() == .subscribed)
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try await eventually { try admin.command(["PUBSUB", "NUMSUB", "feed"]).array?.last == .integer(1) })
            #expect(try admin.command(["CLIENT", "KILL", "TYPE", "pubsub"]) == .integer(1))
            #expect(await events.next(skippingDisconnects: false, skippingConfirmations: false) == .confirmed(channel: "feed"))  // subscribed again
            #expect(await events.next() == .subscribed)
            _ = try admin.command(["PUBLISH", "feed", "after"])
            #expect(await events.next() == .message(channel: "feed", payload: Array("after".utf8)))
        }
    }

    /// A Redis that stops answering (`DEBUG SLEEP`) is noticed by the ping, within the timeout.
    @Test func aSilentConnectionIsNoticedByThePing() async throws {
        try await RedisTestServer.with { server in
            let events = Events(url: server.url, pingInterval: 0.1, timeout: 0.2)
            defer { events.subscriber.stop() }
            #expect(await events.next() == .subscribed)
            let admin = RedisClient(url: server.url, timeout: 5)
            defer { admin.stop() }
            let sleeper = Task { try await admin.command("DEBUG", "SLEEP", "1") }
            #expect(await events.next(skippingDisconnects: false) == .disconnected(.timedOut(call: "PING (pub/sub)", seconds: 0.2)))
            _ = try await sleeper.value
            #expect(await events.next() == .subscribed)
        }
    }
}
