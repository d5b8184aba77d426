import Synchronization

/// The one maker of random ids: feeds' histories, the epoch, instance ids, lease tokens, write ids
/// and commit attempts.
public enum RandomID {
    /// 16 hexadecimal digits from the system's generator, never all zeros: a feed's history (the
    /// `<history>` of an event id, docs/protocol.md), unique across restarts and instances.
    public static func history() -> String {
        hex(UInt64.random(in: 1...UInt64.max))
    }

    /// 32 hexadecimal digits (128 bits) from the system's generator: ids that must not be guessed or
    /// repeated (the epoch, an instance's id, a lease's fencing token).
    public static func token() -> String {
        hex(UInt64.random(in: 0...UInt64.max)) + hex(UInt64.random(in: 0...UInt64.max))
    }

    /// 32 hexadecimal digits unique to this call: 64 random bits drawn once per process, then a
    /// counter. For the ids made on every write (a write's id when the client gave no
    /// `Idempotency-Key`, each commit attempt's nonce), where ``token()``'s two `getrandom` calls
    /// cost a system call each; these ids never leave the server and Redis.
    public static func perWrite() -> String {
        processPrefix + hex(counter.add(1, ordering: .relaxed).newValue)
    }

    private static let processPrefix = hex(UInt64.random(in: 0...UInt64.max))
    private static let counter = Atomic<UInt64>(0)

    /// `value` as 16 lowercase hexadecimal digits, zero-padded.
    static func hex(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            let digits: StaticString = "0123456789abcdef"
            for index in 0..<16 {
                let nibble = Int((value >> (60 - 4 * UInt64(index))) & 0xf)
                buffer[index] = digits.utf8Start[nibble]
            }
            return 16
        }
    }
}
