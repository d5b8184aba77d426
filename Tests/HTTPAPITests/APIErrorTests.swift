import FeedCore
import HTTPAPI
import ViewModelHosting
import EpollRuntime
import Testing

struct APIErrorTests {
    @Test(arguments: [
        (ViewModelError.malformedJSON("invalid JSON at byte 1"), 400, #"{"error":"malformed json","detail":"invalid JSON at byte 1"}"#),
        (.invalidBody("the body must be a JSON object, not array"), 422, #"{"error":"invalid body","detail":"the body must be a JSON object, not array"}"#),
        (.invalidField(field: "items[2].title", reason: "missing"), 422, #"{"error":"invalid field","detail":"items[2].title: missing"}"#),
        (.changeRefused("no"), 422, #"{"error":"change refused","detail":"no"}"#),
        (.renderFailed("boom"), 422, #"{"error":"render failed","detail":"the view model could not render the new state, so nothing changed: boom"}"#),
        (.stateNotEncodable("nan"), 500, #"{"error":"state not encodable","detail":"the view model's state cannot be written as JSON: nan"}"#),
        (.unknownAction(feed: "todo", action: "fly"), 404, #"{"error":"not found","detail":"no action 'fly' on feed 'todo'"}"#),
        (.patchNotAccepted(feed: "todo"), 405, #"{"error":"method not allowed","detail":"PATCH is not allowed here; allowed: GET, HEAD"}"#),
        (.patchUndoneByLoader(feed: "shelf.bob", family: "shelf"), 409, #"{"error":"conflict","detail":"the family 'shelf' makes its members from its loader (truth: .program), which would undo a PATCH of 'shelf.bob' when it is made again; nothing changed (a family hosted with truth: .kept keeps what clients write)"}"#),
        (.notPublished(.store(.full(path: "/data"))), 503, #"{"error":"storage full","detail":"no space left on the device holding '/data'; the write was not stored, retry once space is freed"}"#),
        (.notPublished(.store(.outOfMemory(url: "redis://r:6379", reason: "used_memory 10 of maxmemory 10 bytes"))), 507,
         #"{"error":"storage full","detail":"Redis at redis://r:6379 is full: used_memory 10 of maxmemory 10 bytes; nothing was written: retry once Redis has memory again (feeds deleted, or its maxmemory raised)"}"#),
        (.notPublished(.busy(limit: 256)), 429, #"{"error":"too many writes","detail":"256 writes already wait for this feed; nothing was written: retry after the Retry-After seconds"}"#),
        (.noSuchMember(feed: "home.zed", family: "home", key: "zed"), 404, #"{"error":"not found","detail":"no feed named 'home.zed': the family 'home' has no such key 'zed'"}"#),
        (.loaderFailed(feed: "home.a", reason: "db down"), 500, #"{"error":"loader failed","detail":"the loader of 'home.a' failed, so nothing was made (the next request tries again): db down"}"#),
        (.loaderTimedOut(feed: "home.a", seconds: 10), 504, #"{"error":"loader timed out","detail":"the loader of 'home.a' took longer than 10.0 s, so nothing was made (the next request tries again)"}"#),
        (.familyFull(feed: "home.a", family: "home", maxLive: 2, retryAfter: 60), 503, #"{"error":"family full","detail":"'home.a' cannot be made now: the family 'home' has its most live members (2) and none is idle"}"#),
    ])
    func aViewModelErrorBecomesItsStatusAndBody(error: ViewModelError, status: Int, body: String) {
        let mapped = APIError(error)
        #expect(mapped.status.code == status)
        let response = HTTPResponse.error(mapped.status, mapped.error, detail: mapped.detail)
        guard case .bytes(let bytes) = response.body else { return #expect(Bool(false)) }
        #expect(String(decoding: bytes, as: UTF8.self) == body + "\n")
    }

    /// Refusals that say when to come back carry `Retry-After` (RFC 9110 §10.2.3).
    @Test(arguments: [(ViewModelError.notPublished(.busy(limit: 256)), "1"), (.familyFull(feed: "home.a", family: "home", maxLive: 2, retryAfter: 60), "60")])
    func aRefusalToComeBackLaterSaysWhen(error: ViewModelError, retryAfter: String) {
        #expect(APIError(error).response.headers["Retry-After"] == retryAfter)
    }

    @Test func aViewModelPastAStorageLimitIs507NamingIt() {
        let exceeded = StorageLimitExceeded(limit: .maxFeedBytes, value: 64, needed: 100)
        let mapped = APIError(.notPublished(.limit(exceeded)))
        #expect(mapped.status.code == 507 && mapped.limit?.name == "max-feed-bytes" && mapped.limit?.value == 64)
    }
}
