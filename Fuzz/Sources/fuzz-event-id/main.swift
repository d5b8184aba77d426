import FeedServer
import FuzzSupport

/// `Last-Event-ID` values: parsing never crashes, and an accepted id is spelled exactly as it was given.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEventID(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    if let id = EventID(text) {
        FuzzSupport.check(id.description == text, "accepted '\(text)' but spells it '\(id.description)'")
        FuzzSupport.check(id.version >= 0, "negative version")
    }
    return 0
}
