import CZlib

/// gzip (RFC 1952) and raw deflate (RFC 1951) through zlib.
public enum Gzip {
    /// Compresses a whole body as one gzip member.
    public static func compress(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8] {
        var output = header
        let block = deflateBlock(bytes, level: level, final: true)
        output.append(contentsOf: block)
        appendTrailer(crc: crc32(of: bytes), length: bytes.count, to: &output)
        return output
    }

    /// The 10-byte gzip header: magic, deflate, no flags, no mtime, unknown OS.
    public static let header: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF]

    /// A final, empty deflate block (fixed Huffman, just the end-of-block code).
    public static let finalEmptyBlock: [UInt8] = [0x03, 0x00]

    /// Appends CRC-32 and ISIZE, little-endian (RFC 1952 §2.3.1).
    public static func appendTrailer(crc: UInt32, length: Int, to output: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { output.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
        let size = UInt32(truncatingIfNeeded: length)
        for shift in stride(from: 0, to: 32, by: 8) { output.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
    }

    /// CRC-32 of some bytes.
    public static func crc32(of bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { UInt32(CZlib.crc32(0, $0.baseAddress, uInt($0.count))) }
    }

    /// The CRC-32 of `a + b` from the CRCs of `a` and `b` and the length of `b`.
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, lengthB: Int) -> UInt32 {
        UInt32(crc32_combine(uLong(crcA), uLong(crcB), off_t(lengthB)))
    }

    /// Raw deflate of `bytes` from a fresh state. With `final: false` it ends with a sync flush, so the
    /// output is byte-aligned, refers to nothing before it, and can be spliced into any deflate stream
    /// between other such blocks: that is how one event is compressed once for all its subscribers.
    public static func deflateBlock(_ bytes: [UInt8], level: Int32 = 6, final: Bool) -> [UInt8] {
        var stream = z_stream()
        guard diffstream_deflateInit2(&stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK else { return [] }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(bytes.count))) + 16
        var output = [UInt8](repeating: 0, count: bound)
        var input = bytes
        let produced = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer -> Int in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                _ = deflate(&stream, final ? Z_FINISH : Z_SYNC_FLUSH)
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(produced...)
        return output
    }

    /// Decompresses a gzip stream, complete or not (for tests and clients).
    /// - Returns: the bytes decoded so far, or nil if the data is not valid gzip.
    public static func decompress(_ bytes: [UInt8]) -> [UInt8]? {
        GzipStreamDecoder().decode(bytes)
    }

    /// Whether an `Accept-Encoding` value allows gzip (RFC 9110 §12.5.3, with q-values).
    public static func isAccepted(by acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        var gzipQ: Double?
        var starQ: Double?
        for part in acceptEncoding.split(separator: ",") {
            let pieces = part.split(separator: ";").map { $0.trimmingSpaces().lowercased() }
            guard let coding = pieces.first else { continue }
            var q = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") {
                q = Double(parameter.dropFirst(2)) ?? 0
            }
            if coding == "gzip" || coding == "x-gzip" { gzipQ = q } else if coding == "*" { starQ = q }
        }
        return (gzipQ ?? starQ ?? 0) > 0
    }
}

/// Decodes a gzip stream incrementally, as its bytes arrive (for clients, tests and the load tool).
public final class GzipStreamDecoder {
    private var stream = z_stream()
    private var failed = false

    public init() {
        failed = diffstream_inflateInit2(&stream, 16 + 15) != Z_OK
    }

    deinit { inflateEnd(&stream) }

    /// The bytes these compressed bytes decode to, or nil once the stream is invalid.
    public func decode(_ bytes: [UInt8]) -> [UInt8]? {
        if failed { return nil }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = bytes
        input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            while !failed {
                var status: Int32 = Z_OK
                let produced = chunk.withUnsafeMutableBufferPointer { outBuffer -> Int in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = uInt(outBuffer.count)
                    status = inflate(&stream, Z_SYNC_FLUSH)
                    return outBuffer.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[0..<produced])
                if status != Z_OK && status != Z_BUF_ERROR && status != Z_STREAM_END { failed = true }
                if status == Z_STREAM_END || stream.avail_in == 0 && produced < chunk.count { break }
                if status == Z_BUF_ERROR { break }
            }
            stream.next_in = nil
        }
        return failed ? nil : output
    }
}
