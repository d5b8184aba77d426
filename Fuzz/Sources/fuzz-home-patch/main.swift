import FuzzSupport
import EpollRuntime

/// `PATCH /feeds/home` bodies through `FeedAPI`'s handler (no sockets): every body gets an answer
/// (200, 400 or 422), and the feed keeps answering `GET` with a document.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHomePatch(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Array(UnsafeRawBufferPointer(start: start, count: count))
    let response = FuzzSupport.handle(HTTPRequest(method: "PATCH", target: "/feeds/home", headers: ["Host": "fuzz"], body: body))
    FuzzSupport.check([200, 400, 422].contains(response.status.code), "PATCH answered \(response.status.code)")
    let document = FuzzSupport.handle(HTTPRequest(method: "GET", target: "/feeds/home", headers: ["Host": "fuzz"]))
    FuzzSupport.check(document.status.code == 200, "GET after PATCH answered \(document.status.code)")
    return 0
}
