import HTTPCore
import Testing

struct GzipTests {
    @Test func wholeBodyRoundTrips() {
        let text = Array(String(repeating: "diffstream ", count: 500).utf8)
        let compressed = Gzip.compress(text)
        #expect(compressed.count < text.count / 5)
        #expect(Gzip.decompress(compressed) == text)
    }

    @Test func independentlyDeflatedEventsSpliceIntoOneValidStream() {
        let events = (0..<20).map { Array("event: batch\ndata: {\"n\":\($0),\"text\":\"\(String(repeating: "x", count: $0 * 7))\"}\n\n".utf8) }
        var stream = Gzip.header
        var crc: UInt32 = 0
        var length = 0
        var decodedSoFar: [UInt8] = []
        for event in events {
            stream += Gzip.deflateBlock(event, final: false)
            crc = Gzip.combine(crc, Gzip.crc32(of: event), lengthB: event.count)
            length += event.count
            // Each event is decodable as soon as it is written (flushed, not buffered).
            let decoded = Gzip.decompress(stream)
            decodedSoFar += event
            #expect(decoded == decodedSoFar)
        }
        stream += Gzip.finalEmptyBlock
        Gzip.appendTrailer(crc: crc, length: length, to: &stream)
        #expect(crc == Gzip.crc32(of: events.flatMap { $0 }))
        #expect(Gzip.decompress(stream) == events.flatMap { $0 })
    }

    @Test(arguments: [
        ("gzip", true), ("gzip, deflate, br", true), ("br;q=1, gzip;q=0.5", true), ("gzip;q=0", false),
        ("identity", false), ("*", true), ("*;q=0", false), ("GZIP", true), ("deflate", false),
    ])
    func acceptEncoding(header: String, accepted: Bool) {
        #expect(Gzip.isAccepted(by: header) == accepted)
    }
}

struct GzipStreamDecoderTests {
    @Test func decodesAStreamFedInSmallPieces() {
        let text = Array(String(repeating: "event: batch\ndata: {}\n\n", count: 200).utf8)
        let compressed = Gzip.compress(text)
        let decoder = GzipStreamDecoder()
        var decoded: [UInt8] = []
        var index = 0
        while index < compressed.count {
            let piece = Array(compressed[index..<min(index + 7, compressed.count)])
            decoded += decoder.decode(piece) ?? []
            index += 7
        }
        #expect(decoded == text)
        #expect(GzipStreamDecoder().decode([0x00, 0x01, 0x02, 0x03]) == nil)
    }
}
