import EpollRuntime

/// Fuzzes `HTTPRequestParser` with arbitrary bytes. Beyond "no crash", two invariants:
/// - the bytes fed in one piece and the same bytes fed split at a point the input chooses (its first
///   byte) give the same requests, and both or neither end in a refusal: the parser is incremental,
///   so where reads end must not matter;
/// - after an error the parser stays failed with the same error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let input = Array(bytes.dropFirst())
    var limits = HTTPLimits()
    // Small limits so that the fuzzer reaches every limit with short inputs.
    limits.maxRequestLine = 64
    limits.maxHeaderBytes = 128
    limits.maxHeaderCount = 6
    limits.maxBodyBytes = 64

    let whole = events(feeding: [input], limits: limits)
    let split = Int(first) % (input.count + 1)
    let pieces = events(feeding: [Array(input[..<split]), Array(input[split...])], limits: limits)
    if outcomes(whole) != outcomes(pieces) {
        fatalError("split at \(split) changed the events: \(whole) vs \(pieces)")
    }
    return 0
}

/// Requests as they are, and "refused" for an error, without the `100 Continue` announcements. Which
/// check fires first may depend on what has arrived (a request line still growing past its limit is a
/// 414 at once, the same line with a bare CR found in the complete head is a 400), never whether the
/// bytes are refused or which requests come out before the refusal.
func outcomes(_ events: [HTTPRequestParser.Event]) -> [String] {
    events.compactMap { event in
        switch event {
        case .request(let request): "\(request)"
        case .error: "refused"
        case .expectContinue, .needMore: nil
        }
    }
}

/// Feeds the pieces one after another, collecting every event up to `.needMore` after each; stops at
/// the first error (and checks that it sticks).
func events(feeding pieces: [[UInt8]], limits: HTTPLimits) -> [HTTPRequestParser.Event] {
    var parser = HTTPRequestParser(limits: limits)
    var events: [HTTPRequestParser.Event] = []
    for piece in pieces {
        parser.append(piece)
        while true {
            let event = parser.next()
            if event == .needMore { break }
            events.append(event)
            if case .error = event {
                if parser.next() != event { fatalError("the parser did not stay failed") }
                return events
            }
            if events.count > 10_000 { fatalError("no progress") }
        }
    }
    return events
}
