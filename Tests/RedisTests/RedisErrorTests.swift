import Redis
import Testing

struct RedisErrorTests {
    @Test(arguments: [
        ("LOADING Redis is loading the dataset in memory", true), ("BUSY Redis is busy running a script.", true),
        ("MASTERDOWN Link with MASTER is down", true), ("READONLY You can't write against a read only replica.", true),
        ("NOREPLICAS Not enough good replicas to write.", true), ("TRYAGAIN", true),
        ("ERR unknown command", false), ("WRONGPASS invalid username-password pair", false), ("LOADINGX", false),
        ("MISCONF Errors writing to the AOF file", false), ("OOM command not allowed", false),
    ] as [(String, Bool)])
    func errorAnswersThatMeanNotNow(message: String, temporary: Bool) {
        #expect(RedisError.server(command: "EVALSHA", message: message).temporarilyRefused == temporary)
    }

    @Test func failuresOtherThanAnswersAreNotRefusals() {
        #expect(!RedisError.closed(call: "redisGetReply").temporarilyRefused)
        #expect(!RedisError.timedOut(call: "PING", seconds: 2).temporarilyRefused)
    }
}
