@testable import EpollRuntime
import HTTPCore
import Testing

struct ConnectionQuotaVerdictTests {
    /// The 503 a refused connection gets, with `Connection: close` and `Retry-After: 1`; the per-address
    /// one names the cap. An admitted or dropped connection gets none.
    @Test(arguments: [
        (ConnectionQuota.Verdict.admit, nil),
        (.drop, nil),
        (.refuseServerFull, "the server is at its connection limit; retry later"),
        (.refuseAddressFull, "too many connections from your address (at most 256); close some and retry"),
    ] as [(ConnectionQuota.Verdict, String?)])
    func aRefusalIsA503ThatSaysWhy(verdict: ConnectionQuota.Verdict, detail: String?) {
        let response = verdict.refusal(perAddressCap: 256)
        #expect((response == nil) == (detail == nil))
        guard let response, let detail else { return }
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers["Connection"] == "close" && response.headers["Retry-After"] == "1")
        guard case .bytes(let body) = response.body else {
            Issue.record("a refusal has a body")
            return
        }
        #expect(String(decoding: body, as: UTF8.self) == "{\"error\":\"service unavailable\",\"detail\":\"\(detail)\"}\n")
    }
}
