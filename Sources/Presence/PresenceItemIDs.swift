import Crypto

/// The item ids of presence feeds: an HMAC-SHA256 of the feed's name and the user's key under a secret
/// of the process (or of a Redis deployment), so that an id says nothing of the subject to whoever
/// lacks the secret (`SubjectKey.hashed`, an unkeyed SHA-256, can be reversed for an e-mail address by
/// trying addresses), and one user's ids differ from feed to feed.
public struct PresenceItemIDs: Sendable {
    /// The HMAC with the secret already taken in (its inner and outer pads): each id copies it.
    private let keyed: HMAC<SHA256>

    /// Ids under a fresh random secret (256 bits): they change when the process restarts.
    public init() {
        keyed = HMAC(key: SymmetricKey(size: .bits256))
    }

    /// Ids under `secret` (a deployment's shared one, so that every instance names a user alike).
    public init(secret: [UInt8]) {
        keyed = HMAC(key: SymmetricKey(data: secret))
    }

    /// The id of the user `userKey` in the presence of `feed`: 24 hexadecimal digits (96 bits).
    /// - Complexity: O(length of the inputs).
    public func id(feed: String, userKey: String) -> String {
        var input = Array(feed.utf8)
        input.append(0)
        input += userKey.utf8
        var hmac = keyed
        hmac.update(data: input)
        let mac = hmac.finalize()
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(24)
        for byte in mac.prefix(12) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
