import FeedCore
import FeedStorage
import Foundation
import Synchronization
import Testing

/// Bytes a store counts itself, set by the test.
final class KeptStub: KeptBytes {
    let kept = Mutex(0)
    init(_ bytes: Int) { kept.withLock { $0 = bytes } }
    func bytes() -> Int { kept.withLock { $0 } }
}

struct StorageAccountTests {
    @Test func refusesTheFeedPastMaxFeedsAndDeletingMakesRoom() throws {
        let account = StorageAccount(limits: StorageLimits(maxFeeds: 2, maxFeedBytes: 100, maxStoreBytes: 1000))
        try account.admitFeed(bytes: 10)
        try account.admitFeed(bytes: 10)
        #expect(throws: StorageLimitExceeded(limit: .maxFeeds, value: 2, needed: 3)) { try account.admitFeed(bytes: 10) }
        #expect(account.usage == (2, 20))
        account.releaseFeed(bytes: 10)
        try account.admitFeed(bytes: 10)
        #expect(account.usage == (2, 20))
    }

    @Test func hostedFeedsDoNotCountAgainstMaxFeedsButTheirBytesDo() throws {
        let account = StorageAccount(limits: StorageLimits(maxFeeds: 1, maxFeedBytes: 100, maxStoreBytes: 50))
        try account.admitFeed(bytes: 10, counted: false)
        try account.admitFeed(bytes: 10)
        #expect(account.usage == (1, 20))
        #expect(throws: StorageLimitExceeded(limit: .maxFeeds, value: 1, needed: 2)) { try account.admitFeed(bytes: 10) }
        try account.admitFeed(bytes: 10, counted: false)
        #expect(throws: StorageLimitExceeded(limit: .maxStoreBytes, value: 50, needed: 51)) { try account.admitFeed(bytes: 21, counted: false) }
        // A restored feed that turns out to be hosted stops counting.
        account.restoreFeed(bytes: 5)
        #expect(account.usage == (2, 35))
        account.exemptFeed()
        #expect(account.usage == (1, 35))
        account.releaseFeed(bytes: 10, counted: false)
        #expect(account.usage == (1, 25))
    }

    @Test func refusesASnapshotPastMaxFeedBytes() throws {
        let account = StorageAccount(limits: StorageLimits(maxFeeds: 2, maxFeedBytes: 100, maxStoreBytes: 1000))
        try account.checkSnapshot(bytes: 100)
        #expect(throws: StorageLimitExceeded(limit: .maxFeedBytes, value: 100, needed: 101)) { try account.checkSnapshot(bytes: 101) }
    }

    @Test func chargesGrowthAgainstMaxStoreBytesAndAlwaysAllowsShrinking() throws {
        let account = StorageAccount(limits: StorageLimits(maxFeeds: 10, maxFeedBytes: 1000, maxStoreBytes: 100))
        try account.admitFeed(bytes: 60)
        #expect(throws: StorageLimitExceeded(limit: .maxStoreBytes, value: 100, needed: 101)) { try account.admitFeed(bytes: 41) }
        try account.admitFeed(bytes: 40)
        #expect(throws: StorageLimitExceeded.self) { try account.charge(from: 40, to: 41) }
        #expect(account.usage.bytes == 100)
        try account.charge(from: 60, to: 30)
        try account.charge(from: 40, to: 70)
        #expect(account.usage.bytes == 100)
    }

    /// Issue 38: a family's kept members count against --max-store-bytes where they are kept, live or not.
    @Test func keptBytesCountInEveryCheckAndInTheUsage() throws {
        let account = StorageAccount(limits: StorageLimits(maxFeeds: 10, maxFeedBytes: 1000, maxStoreBytes: 100))
        let kept = KeptStub(70)
        account.count(kept: kept)
        account.count(kept: kept)  // once per store
        #expect(account.usage == (0, 70))
        try account.admitFeed(bytes: 30)
        #expect(account.usage == (1, 100))
        #expect(throws: StorageLimitExceeded(limit: .maxStoreBytes, value: 100, needed: 101)) { try account.admitFeed(bytes: 1, counted: false) }
        #expect(throws: StorageLimitExceeded(limit: .maxStoreBytes, value: 100, needed: 101)) { try account.charge(from: 30, to: 31) }
        try account.charge(from: 30, to: 20)  // shrinking always succeeds
        kept.kept.withLock { $0 = 90 }  // the store grew: the next growth is refused
        #expect(account.usage == (1, 110))
        #expect(throws: StorageLimitExceeded(limit: .maxStoreBytes, value: 100, needed: 111)) { try account.charge(from: 20, to: 21) }
        kept.kept.withLock { $0 = 0 }  // members deleted: room again
        try account.admitFeed(bytes: 80)
        #expect(account.usage == (2, 100))
    }

    @Test(arguments: [false, true])
    func aLogIsCountedOnlyWhenItsStoreIs(_ registered: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("account-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let members = try MemberStore(directory: directory)
        defer { members.close() }
        let account = StorageAccount()
        if registered { account.count(kept: members) }
        #expect(account.counts(members) == registered)
        #expect(!account.counts(MemoryFeedLog()))
    }
}
