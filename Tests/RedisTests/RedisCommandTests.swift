import Testing
@testable import Redis

struct RedisCommandTests {
    /// RESP as the protocol spells it: `*<count>\r\n`, then `$<length>\r\n<bytes>\r\n` per argument.
    static func oracle(_ arguments: [[UInt8]]) -> [UInt8] {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments { bytes += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10] }
        return bytes
    }

    /// The count at the front stays right however many digits it grows to (9 → 10, 99 → 100).
    @Test(arguments: [1, 2, 9, 10, 11, 99, 100, 101, 1_000])
    func theCountMatchesTheArgumentsAppended(count: Int) {
        let arguments = (0..<count).map { index in Array("a\(index)".utf8) + (index % 3 == 1 ? [0, 13, 10] : []) }
        #expect(Array(RedisCommand(arguments).resp) == Self.oracle(arguments))
        var command = RedisCommand("a0", capacity: 0)
        for argument in arguments.dropFirst() { command.append(argument) }
        #expect(Array(command.resp) == Self.oracle(arguments))
        #expect(command.count == count)
    }

    /// Numbers, text and joined parts are the arguments their bytes spell.
    @Test(arguments: [0, 7, 10, -1, -10, 1_234_567_890_123, Int.max, Int.min])
    func typedArgumentsAreTheirText(number: Int) {
        var command = RedisCommand("evalsha")
        command.append(number)
        command.append("é\r\n")
        command.append(concatenating: "p:v1:", "write:", "news", ":", "id 1")
        command.append(concatenating: "p:v1:", "epoch")
        command.append([])
        let expected = ["evalsha", String(number), "é\r\n", "p:v1:write:news:id 1", "p:v1:epoch", ""].map { Array($0.utf8) }
        #expect(Array(command.resp) == Self.oracle(expected))
    }

    /// Errors name the command by its first argument, upper-cased, never by the data after it.
    @Test func theNameIsTheFirstArgument() {
        var command = RedisCommand("evalsha")
        command.append("secret data")
        #expect(command.name == "EVALSHA")
        #expect(RedisCommand([]).name == "(empty command)")
        #expect(Array(RedisCommand([]).resp) == Self.oracle([]))
    }
}
