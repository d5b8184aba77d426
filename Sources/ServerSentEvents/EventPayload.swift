import Synchronization

/// The bytes of one server-sent event (or comment), encoded once and shared by every subscriber it
/// goes to: queuing it to a connection adds a reference, not a copy.
///
/// For subscribers that accept gzip, the event is deflated once (lazily, on first use) into an
/// independent, byte-aligned block that is spliced into each subscriber's gzip stream, and its CRC is
/// combined into each stream's running CRC; no per-subscriber compression happens.
public final class EventPayload: Sendable {
    public let bytes: [UInt8]
    /// The deflate block and CRC once made (HTTPCore's `deflated`, which knows gzip), then shared.
    package let compressed = Mutex<CompressedEvent?>(nil)

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public convenience init(_ text: String) { self.init(Array(text.utf8)) }
}

/// An event deflated once for every gzipped stream it goes to: an independent, byte-aligned deflate
/// block, the CRC-32 of the event's bytes, and their length (to combine into each stream's CRC).
package struct CompressedEvent: Sendable {
    package var block: [UInt8]
    package var crc: UInt32
    package var length: Int

    package init(block: [UInt8], crc: UInt32, length: Int) {
        self.block = block
        self.crc = crc
        self.length = length
    }
}
