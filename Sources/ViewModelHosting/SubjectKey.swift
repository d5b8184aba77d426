import Crypto
import FeedCore

/// How a token's subject (its `sub` claim) becomes a feed-name key: a family of per-user feeds names
/// each member `PREFIX.KEY`, and a member bound to its user is the one whose key is the subject's.
///
/// A subject may hold any characters and be of any length (`auth0|5f1c…`, an email), while a key uses
/// the feed-name alphabet (``FeedID``) and the whole name fits 64 characters. The mapping is injective,
/// so two subjects never share a key:
/// - ``escaped`` (the default): ASCII letters, digits, `-` and `.` stay as they are; every other byte of
///   the subject's UTF-8, `_` included, becomes `_` and two uppercase hex digits (`alice@example.com` →
///   `alice_40example.com`, `auth0|x` → `auth0_7Cx`). A subject whose escaped form does not fit is
///   ``hashed``: its key starts with `_h`, which no escaped key does (`_` there is always followed by
///   uppercase hex).
/// - ``hashed``: `_h` and the lowercase hex of the subject's SHA-256, cut to fit (at least 32 digits,
///   128 bits): the same length for every user, no user's subject readable in a name.
/// - ``custom(_:)``: the program's own, e.g. a user id looked up in its database. A key it returns that
///   is not a valid key, or does not fit, maps the subject to nothing.
public struct SubjectKey: Sendable {
    private let map: @Sendable (String, Int) -> String?

    /// Readable where it can be: see the type's description.
    public static let escaped = SubjectKey { subject, room in
        let key = escape(subject)
        return key.utf8.count <= room ? key : hash(subject, room: room)
    }

    /// A digest for every subject: see the type's description.
    public static let hashed = SubjectKey { subject, room in hash(subject, room: room) }

    /// The program's own mapping; nil maps the subject to nothing (no key: its user has no member).
    public static func custom(_ map: @escaping @Sendable (String) -> String?) -> SubjectKey {
        SubjectKey { subject, _ in map(subject) }
    }

    private init(_ map: @escaping @Sendable (String, Int) -> String?) {
        self.map = map
    }

    /// The key of `subject` in a family named `prefix` (members `prefix.KEY`), or nil when it has none
    /// that makes a valid feed name of at most 64 characters.
    /// - Complexity: O(n) in the subject's length.
    public func key(for subject: String, prefix: String) -> String? {
        let room = 64 - prefix.utf8.count - 1
        guard room > 0, let key = map(subject, room), !key.isEmpty, key.utf8.count <= room,
              FeedID.isValid(prefix + "." + key) else { return nil }
        return key
    }

    /// The escaped form: see ``escaped``.
    static func escape(_ subject: String) -> String {
        var key: [UInt8] = []
        key.reserveCapacity(subject.utf8.count)
        for byte in subject.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."):
                key.append(byte)
            default:
                key.append(UInt8(ascii: "_"))
                key.append(hexDigits[Int(byte >> 4)])
                key.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: key, as: UTF8.self)
    }

    /// `_h` and the hex of SHA-256, cut to `room`; nil when fewer than 32 digits would fit.
    static func hash(_ subject: String, room: Int) -> String? {
        let digits = min(64, room - 2)
        guard digits >= 32 else { return nil }
        let hex = SHA256.hash(data: Array(subject.utf8)).map { byte in
            String(decoding: [lowerHexDigits[Int(byte >> 4)], lowerHexDigits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
        return "_h" + hex.prefix(digits)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    private static let lowerHexDigits = Array("0123456789abcdef".utf8)
}
