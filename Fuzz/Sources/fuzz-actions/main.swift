import FuzzSupport
import EpollRuntime

/// The view models' actions through `FeedAPI`'s handler (no sockets). The first byte picks the action
/// (`forecast/select` or `blackjack/deal`), the rest is the body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzActions(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let target = bytes.first.map { $0 % 4 == 0 } ?? false ? "/feeds/blackjack/actions/deal" : "/feeds/forecast/actions/select"
    let response = FuzzSupport.handle(HTTPRequest(method: "POST", target: target, headers: ["Host": "fuzz"], body: Array(bytes.dropFirst())))
    FuzzSupport.check([200, 400, 422].contains(response.status.code), "\(target) answered \(response.status.code)")
    return 0
}
