#if canImport(Glibc)
import Glibc
#endif

/// A minimal leveled logger writing one line per message to standard error.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case debug, info, warning, error, off
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["debug", "info", "warning", "error", "off"][rawValue] }
        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
            self = level
        }
    }

    public var level: Level
    public var label: String

    public init(label: String, level: Level = .info) {
        self.label = label
        self.level = level
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String) {
        guard level >= self.level, level != .off else { return }
        var line = "\(Self.timestamp()) \(level) [\(label)] \(message())\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }  // one write(2) per line: lines never interleave
    }

    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        return String(format4(Int(parts.tm_year) + 1900)) + "-" + pad(Int(parts.tm_mon) + 1) + "-" + pad(Int(parts.tm_mday))
            + "T" + pad(Int(parts.tm_hour)) + ":" + pad(Int(parts.tm_min)) + ":" + pad(Int(parts.tm_sec)) + "Z"
    }

    private static func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    private static func format4(_ value: Int) -> String { String(value) }
}

/// The current time as an IMF-fixdate (RFC 9110 §5.6.7), for the `Date` header.
func httpDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func pad(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(days[Int(parts.tm_wday)]), \(pad(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) \(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)) GMT"
}
