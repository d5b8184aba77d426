extension EventPayload {
    /// Deflates now (off the loops, before a fan-out), so that no loop thread ever compresses.
    public func prepareDeflated() { _ = deflated }

    /// The deflate block and CRC, computed on first use and then shared by every gzipped stream.
    package var deflated: CompressedEvent {
        compressed.withLock { cached in
            if let cached { return cached }
            let value = CompressedEvent(block: Gzip.deflateBlock(bytes, final: false), crc: Gzip.crc32(of: bytes), length: bytes.count)
            cached = value
            return value
        }
    }
}
