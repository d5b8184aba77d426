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

    /// Commands go out as RESP arrays of bulk strings, laid out here: lengths in bytes, binary data
    /// and empty arguments as they are.
    @Test(arguments: [
        (["PING"], "*1\r\n$4\r\nPING\r\n"),
        (["SET", "k", ""], "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"),
        (["ECHO", "a\r\nb"], "*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n"),
        (["ECHO", "é"], "*2\r\n$4\r\nECHO\r\n$2\r\né\r\n"),
    ])
    func commandsAreLaidOutAsRESP(arguments: [String], expected: String) {
        #expect(Array(RedisCommand(arguments.map { Array($0.utf8) }).resp) == Array(expected.utf8))
    }

    @Test func aLongBinaryArgumentGoesThroughWhole() async throws {
        try await RedisTestServer.with { server in
            let connection = try RedisConnection(url: server.url, timeout: 2)
            let value = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            #expect(try connection.command([Array("SET".utf8), Array("big".utf8), value]) == .status("OK"))
            #expect(try connection.command([Array("GET".utf8), Array("big".utf8)]) == .bulk(value))
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
}
