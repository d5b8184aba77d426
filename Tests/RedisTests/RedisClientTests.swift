import Foundation
import Testing
import TestSupport
@testable import Redis

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisClientTests {
    @Test func aServerThatClosesIsReportedAndTheClientReconnects() async throws {
        try await RedisTestServer.with { server in
            let client = RedisClient(url: server.url, timeout: 2)
            defer { client.stop() }
            #expect(try await client.command("CLIENT", "SETNAME", "victim") == .status("OK"))
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try admin.command(["CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal"]) == .integer(1))
            await #expect(throws: RedisError.closed(call: "PING")) { try await client.command("PING") }
            #expect(try await client.command("PING") == .status("PONG"))
        }
    }

    @Test func aClientRunsCallsFromManyTasks() async throws {
        try await RedisTestServer.with { server in
            let client = RedisClient(url: server.url, timeout: 2)
            defer { client.stop() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<50 { group.addTask { _ = try await client.command("INCR", "n") } }
                try await group.waitForAll()
            }
            #expect(try await client.command("GET", "n") == .bulk(Array("50".utf8)))
            client.stop()
            await #expect(throws: RedisError.notConnected(call: "RedisClient.command")) { try await client.command("PING") }
            await #expect(throws: RedisError.notConnected(call: "RedisClient.run")) { try await client.run { connection throws(RedisError) in try connection.command(["PING"]) } }
        }
    }

    /// Commands queued by many tasks at once share the connection's turns (pipelined) and each gets
    /// its own answer: 300 `INCR`s answer 1 to 300, each once, on one connection.
    @Test func pipelinedCommandsEachGetTheirOwnAnswer() async throws {
        try await RedisTestServer.with { server in
            let client = RedisClient(url: server.url, timeout: 2)
            defer { client.stop() }
            #expect(try await client.command("CLIENT", "SETNAME", "pipelined") == .status("OK"))
            let answers = try await withThrowingTaskGroup(of: (Int, Int, String?).self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let reply = try await client.command([Array("EVAL".utf8), Array("return {redis.call('INCR', KEYS[1]), ARGV[1]}".utf8), Array("1".utf8), Array("n".utf8), Array(String(index).utf8)])
                        return (index, reply.array?[0].integer ?? -1, reply.array?[1].string)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { String($0.0) == $0.2 })  // each command's own answer
            #expect(Set(answers.map(\.1)) == Set(1...300))
            let clients = try await client.command("CLIENT", "LIST")
            #expect(clients.string?.split(separator: "\n").filter { $0.contains("name=pipelined") }.count == 1)
        }
    }

    /// A connection that breaks with commands in flight fails each of them with an error whose outcome
    /// is unknown (they were sent), and the next command gets a new connection. `BLPOP` with no
    /// timeout holds the connection's turn until the kill; nothing ever pushes, so none can succeed
    /// (those of the turn killed fail as `closed`, later turns' time out on a new connection).
    @Test func commandsInFlightWhenTheConnectionBreaksFailWithAnUnknownOutcome() async throws {
        try await RedisTestServer.with { server in
            let client = RedisClient(url: server.url, timeout: 4)
            defer { client.stop() }
            #expect(try await client.command("CLIENT", "SETNAME", "victim") == .status("OK"))
            let admin = RedisClient(url: server.url, timeout: 2)
            defer { admin.stop() }
            async let results = withTaskGroup(of: Result<RedisReply, RedisError>.self) { group in
                for _ in 0..<20 {
                    group.addTask { () -> Result<RedisReply, RedisError> in
                        do throws(RedisError) { return .success(try await client.command("BLPOP", "never", "0")) } catch { return .failure(error) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            // Until Redis shows the victim blocked in BLPOP (its turn is in flight), then kill it.
            var blocked = false
            for _ in 0..<10_000 where !blocked {
                blocked = try await admin.command("CLIENT", "LIST").string?.split(separator: "\n")
                    .contains { $0.contains("name=victim") && $0.contains("cmd=blpop") } ?? false
            }
            #expect(blocked)
            #expect(try await admin.command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal") == .integer(1))
            let failures = await results.compactMap { if case .failure(let error) = $0 { error } else { nil } }
            #expect(failures.count == 20 && failures.allSatisfy(\.outcomeUnknown))
            #expect(failures.contains(.closed(call: "BLPOP")))
            #expect(try await client.command("PING") == .status("PONG"))
        }
    }

    /// Full duplex: a command queued while an earlier one's answer is awaited is written at once. The
    /// victim's `BLPOP` blocks its connection in Redis; the `SET` queued after it shows in the victim's
    /// query buffer (`qbuf`) before anything unblocks the `BLPOP`. (A client that waits for a turn's
    /// answers before writing the next would never send it: the loop ends and the check fails.)
    @Test func aCommandIsWrittenWhileEarlierAnswersAreAwaited() async throws {
        try await RedisTestServer.with { server async throws in
            let client = RedisClient(url: server.url, timeout: 10)
            defer { client.stop() }
            let admin = RedisClient(url: server.url, timeout: 2)
            defer { admin.stop() }
            #expect(try await client.command("CLIENT", "SETNAME", "victim") == .status("OK"))
            async let popped = client.command("BLPOP", "q", "0")
            #expect(try await Self.waitForVictim(admin) { $0.contains("cmd=blpop") })
            async let set = client.command("SET", "marker", "1")
            #expect(try await Self.waitForVictim(admin) { !$0.contains("qbuf=0 ") })
            #expect(try await admin.command("GET", "marker") == .null)  // queued behind the BLPOP, not run yet
            #expect(try await admin.command("LPUSH", "q", "x") == .integer(1))
            #expect(try await popped == .array([.bulk(Array("q".utf8)), .bulk(Array("x".utf8))]))
            #expect(try await set == .status("OK"))
        }
    }

    /// Bodies and commands queued together from many tasks: a body runs only once every answer awaited
    /// is in, so its own command reads its own answer (a `GET`'s bulk string, never an `INCR`'s
    /// integer), and every `INCR` gets its own answer.
    @Test(arguments: [1, 7, 42])
    func bodiesQueuedAmongCommandsReadTheirOwnAnswers(seed: UInt64) async throws {
        try await RedisTestServer.with { server in
            let client = RedisClient(url: server.url, timeout: 5)
            defer { client.stop() }
            var generator = SeededGenerator(seed: seed)
            let kinds = (0..<400).map { _ in Bool.random(using: &generator) }  // true: a body
            let results = try await withThrowingTaskGroup(of: (Bool, RedisReply).self) { group in
                for body in kinds {
                    group.addTask {
                        if body { return (true, try await client.run { connection throws(RedisError) in try connection.command(["GET", "n"]) }) }
                        return (false, try await client.command("INCR", "n"))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let increments = results.filter { !$0.0 }.map(\.1)
            let reads = results.filter(\.0).map(\.1)
            let counts = increments.compactMap { if case .integer(let value) = $0 { value } else { nil } }
            #expect(counts.count == increments.count && !reads.isEmpty)
            #expect(Set(counts) == Set(1...counts.count))
            #expect(reads.allSatisfy { if case .bulk = $0 { true } else { $0 == .null } })
        }
    }

    /// A Redis that never answers fails every command awaiting an answer once nothing was heard for the
    /// timeout, each with an unknown outcome named for the oldest of them; the client stays usable.
    @Test func commandsAwaitingASilentServerTimeOut() async throws {
        let listener = try SilentListener()
        let client = RedisClient(url: RedisURL(host: "127.0.0.1", port: listener.port), timeout: 0.2)
        defer { client.stop() }
        let failures = await withTaskGroup(of: RedisError?.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    do throws(RedisError) { _ = try await client.command("ECHO", "x"); return nil } catch { return error }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(failures == Array(repeating: .timedOut(call: "ECHO", seconds: 0.2), count: 5))
        #expect(failures.allSatisfy { $0?.outcomeUnknown == true })
        await #expect(throws: RedisError.timedOut(call: "PING", seconds: 0.2)) { try await client.command("PING") }
    }

    /// Polls `CLIENT LIST` until the connection named `victim` matches, at most 10,000 times (each an
    /// `await`, so the calls under test get the pool's threads meanwhile).
    private static func waitForVictim(_ admin: RedisClient, _ matches: (Substring) -> Bool) async throws(RedisError) -> Bool {
        for _ in 0..<10_000 {
            let list = try await admin.command("CLIENT", "LIST").string ?? ""
            if list.split(separator: "\n").contains(where: { $0.contains("name=victim") && matches($0) }) { return true }
        }
        return false
    }
}
