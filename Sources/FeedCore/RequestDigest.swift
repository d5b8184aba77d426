// The feed core's one use of Crypto: the digest is computed where a write is committed with its
// `Idempotency-Key` (the feed's write path hands it to the store with the key's answer), and SHA-256
// is swift-crypto's, not a hash of our own.
import Crypto

/// Digests of the requests an `Idempotency-Key` comes with. A shared store keeps the digest with the
/// key's first answer: a retry (the same request) gets that answer again, and another request sent with
/// the same key is refused with `422` instead (draft-ietf-httpapi-idempotency-key-header-06 §2.7), so a
/// key reused by mistake never answers for a write that did not run.
public enum RequestDigest {
    /// The hex of the first 16 bytes of SHA-256 over the operation, a newline and its input.
    /// - Parameter operation: what the request does to the feed: `PUT`, `DELETE`, `PATCH`, or
    ///   `POST <action>`.
    /// - Complexity: O(n) in the input's length.
    public static func of(_ operation: String, _ input: [UInt8] = []) -> String {
        var hash = SHA256()
        hash.update(data: Array(operation.utf8) + [UInt8(ascii: "\n")])
        hash.update(data: input)
        return hash.finalize().prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
