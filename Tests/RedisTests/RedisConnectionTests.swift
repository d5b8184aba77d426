import Foundation
import Testing
@testable import Redis

@Suite(.enabled(if: RedisTestServer.isInstalled, RedisTestServer.skipReason))
struct RedisConnectionTests {
    @Test func commandsAnswerEveryReplyType() async throws {
        try await RedisTestServer.with { server in
            let connection = try RedisConnection(url: server.url, timeout: 2)
            let binary: [UInt8] = [0, 1, 255, 10, 13, 0]
            #expect(try connection.command([Array("SET".utf8), Array("k".utf8), binary]) == .status("OK"))
            #expect(try connection.command([Array("GET".utf8), Array("k".utf8)]) == .bulk(binary))
            #expect(try connection.command(["GET", "missing"]) == .null)
            #expect(try connection.command(["INCRBY", "n", "41"]) == .integer(41))
            #expect(try connection.command(["RPUSH", "l", "a", ""]) == .integer(2))
            #expect(try connection.command(["LRANGE", "l", "0", "-1"]) == .array([.bulk(Array("a".utf8)), .bulk([])]))
            // An error answer leaves the connection usable.
            guard case .error(let message) = try connection.command(["INCR", "k"]) else { Issue.record("no error"); return }
            #expect(message.hasPrefix("ERR"))
            #expect(connection.isOpen)
            #expect(try connection.command(["PING"]) == .status("PONG"))
        }
    }

    @Test func aPipelineAnswersInOrder() async throws {
        try await RedisTestServer.with { server in
            let connection = try RedisConnection(url: server.url, timeout: 2)
            let commands = (0..<100).map { _ in ["INCR", "counter"].map { Array($0.utf8) } }
            let replies = try connection.pipeline(commands)
            #expect(replies == (1...100).map { .integer($0) })
        }
    }

    @Test func aURLsPasswordAndDatabaseAreUsed() async throws {
        try await RedisTestServer.with { server in
            let admin = try RedisConnection(url: server.url, timeout: 2)
            #expect(try admin.command(["ACL", "SETUSER", "app", "on", ">s3cret", "~*", "+@all"]) == .status("OK"))
            var url = server.url
            url.user = "app"
            url.password = "s3cret"
            url.database = 3
            let app = try RedisConnection(url: url, timeout: 2)
            #expect(try app.command(["SET", "x", "1"]) == .status("OK"))
            #expect(try admin.command(["SELECT", "3"]) == .status("OK"))
            #expect(try admin.command(["GET", "x"]) == .bulk(Array("1".utf8)))
            // A refusal is the server's answer (the start stops on it), not a connection to try again.
            url.password = "wrong"
            #expect { try RedisConnection(url: url, timeout: 2) } throws: { error in
                guard case .server(let command, let message) = error as? RedisError else { return false }
                return command == "AUTH" && message.hasPrefix("WRONGPASS")
            }
            url.password = "s3cret"
            url.database = 100_000
            #expect { try RedisConnection(url: url, timeout: 2) } throws: { error in
                guard case .server(let command, _) = error as? RedisError else { return false }
                return command == "SELECT"
            }
        }
    }

    @Test func aRedisThatHangsFailsTheCallWithinTheTimeout() throws {
        let listener = try SilentListener()
        let connection = try RedisConnection(url: RedisURL(host: "127.0.0.1", port: listener.port), timeout: 0.2)
        #expect(throws: RedisError.timedOut(call: "PING", seconds: 0.2)) { try connection.command(["PING"]) }
        #expect(RedisError.timedOut(call: "PING", seconds: 0.2).outcomeUnknown)
        #expect(!connection.isOpen)
        #expect(throws: RedisError.notConnected(call: "PING")) { try connection.command(["PING"]) }
    }

    @Test func aRefusedConnectionNamesTheEndpoint() throws {
        let port = try RedisTestServer.freePort()
        #expect { try RedisConnection(url: RedisURL(host: "127.0.0.1", port: port), timeout: 1) } throws: { error in
            guard case .connect(let endpoint, let reason) = error as? RedisError else { return false }
            return endpoint == "127.0.0.1:\(port)" && reason.contains("refused")
        }
    }

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
}
