import FeedServer
import Testing

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
}
