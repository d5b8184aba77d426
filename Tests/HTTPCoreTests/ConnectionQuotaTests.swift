@testable import HTTPCore
import Testing

struct ConnectionQuotaTests {
    @Test func thePerAddressCapRefusesOnlyThatAddress() {
        var quota = ConnectionQuota(maxConnections: 100, maxPerAddress: 2)
        #expect(quota.admit(address: "10.0.0.1") == .admit)
        #expect(quota.admit(address: "10.0.0.1") == .admit)
        #expect(quota.admit(address: "10.0.0.1") == .refuseAddressFull)
        #expect(quota.admit(address: "10.0.0.2") == .admit)
        #expect(quota.open == 3)
        #expect(quota.count(from: "10.0.0.1") == 2)
    }

    @Test func closingFreesTheSlot() {
        var quota = ConnectionQuota(maxConnections: 100, maxPerAddress: 1)
        #expect(quota.admit(address: "::1") == .admit)
        #expect(quota.admit(address: "::1") == .refuseAddressFull)
        quota.releaseRefused()
        quota.release(address: "::1")
        #expect(quota.count(from: "::1") == 0 && quota.open == 0 && quota.refusing == 0)
        #expect(quota.perAddress.isEmpty, "no entry kept for an address with no connection")
        #expect(quota.admit(address: "::1") == .admit)
    }

    @Test func zeroTurnsThePerAddressCapOff() {
        var quota = ConnectionQuota(maxConnections: 1000, maxPerAddress: 0)
        for _ in 0..<500 { #expect(quota.admit(address: "127.0.0.1") == .admit) }
        #expect(quota.perAddress.isEmpty)
    }

    @Test func theServerCapComesFirstAndRefusalsAreBounded() {
        var quota = ConnectionQuota(maxConnections: 2, maxPerAddress: 1)
        quota.refusalSlack = 2
        #expect(quota.admit(address: "a") == .admit)
        #expect(quota.admit(address: "b") == .admit)
        #expect(quota.admit(address: "a") == .refuseServerFull)
        #expect(quota.admit(address: "c") == .refuseServerFull)
        #expect(quota.admit(address: "d") == .drop, "past the slack, not even a 503")
        quota.releaseRefused()
        #expect(quota.admit(address: "d") == .refuseServerFull)
    }
}
