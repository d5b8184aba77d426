import DiffStreamJSON

/// The `id:` of an event: `ds1.<history>.<version>`.
///
/// `history` is 16 random hex digits drawn when a feed is created, so an id from another process, a
/// deleted and re-created feed, or anything else is recognised as foreign (the chance of a collision is
/// 2⁻⁶⁴) and answered with a fresh snapshot. Clients treat the id as opaque.
public struct EventID: Equatable, Sendable, CustomStringConvertible {
    public var history: String
    public var version: Int

    public init(history: String, version: Int) {
        self.history = history
        self.version = version
    }

    public var description: String {
        var writer = JSONWriter(capacity: 40)
        write(into: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// ``description``'s bytes, written without making a `String` (every batch event carries an id).
    package func write(into writer: inout JSONWriter) {
        writer.raw("ds1.")
        writer.bytes.append(contentsOf: history.utf8)
        writer.byte(UInt8(ascii: "."))
        writer.write(version)
    }

    /// Parses an id; nil for anything not in exactly our format.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "ds1", parts[1].utf8.count == 16,
              parts[1].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }),
              (1...18).contains(parts[2].utf8.count), parts[2].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              parts[2].utf8.count == 1 || parts[2].utf8.first != UInt8(ascii: "0"),  // one spelling per id (found by fuzz-event-id)
              let version = Int(parts[2])
        else { return nil }
        self.init(history: String(parts[1]), version: version)
    }

}
