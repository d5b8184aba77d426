/// Feed names: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot (so no `.` or `..`).
public enum FeedID {
    /// Asked at least twice per request (the route, the log line), from other modules: inlinable, over
    /// the name's contiguous bytes (a copy of them into an array cost more than the check).
    /// - Complexity: O(n) in the name's length, at most 64 bytes looked at past the length check.
    @inlinable
    public static func isValid(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in
            guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: ".") else { return false }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    continue
                default:
                    return false
                }
            }
            return true
        }
    }
}
