/// Entity tags (`ETag`) and `If-None-Match`, RFC 9110 §8.8.3 and §13.1.2. Pure.
public enum EntityTag {
    /// The tag of a representation's gzip variant: a strong tag `"x"` becomes `"x-gz"` (a different
    /// content coding is a different representation, so a strong tag must differ, RFC 9110 §8.8.3).
    /// A weak tag, or text that is not a tag, is returned as it is.
    public static func gzipVariant(of tag: String) -> String {
        guard tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\""), !tag.hasPrefix("W/") else { return tag }
        return String(tag.dropLast()) + "-gz\""
    }

    /// The first of `candidates` (strong tags, `"…"`) that an `If-None-Match` field value names, by the
    /// weak comparison the field uses (RFC 9110 §13.1.2: `W/"x"` matches `"x"`); `*` names the first.
    /// Nil when none matches: the request's condition holds and the full response is due.
    /// - Complexity: O(n · m) for n listed tags and m candidates.
    public static func match(ifNoneMatch field: String, among candidates: [String]) -> String? {
        if field.trimmingSpaces() == "*" { return candidates.first }
        for listed in field.split(separator: ",") {
            var tag = Substring(listed.trimmingSpaces())
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if let found = candidates.first(where: { $0 == tag }) { return found }
        }
        return nil
    }
}
