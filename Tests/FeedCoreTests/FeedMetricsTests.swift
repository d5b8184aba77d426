import FeedCore
import Testing

/// `/metrics` is bounded by the feeds that exist and by families, not by every user ever seen (issue 52).
struct FeedMetricsTests {
    /// `home.*` are the members of `home`.
    final class HomeMembers: FeedFamilies {
        func familyPrefix(of name: String) -> String? { name.hasPrefix("home.") ? "home" : nil }
    }

    static func series(_ metrics: FeedMetrics) -> [String: Double] {
        Dictionary(uniqueKeysWithValues: metrics.samples().map { sample in
            ("\(sample.name){\(sample.labels.map { "\($0.0)=\($0.1)" }.joined(separator: ","))}", sample.value)
        })
    }

    @Test func membersCountUnderTheirFamilyAndADroppedFeedLeavesNoSeries() {
        let metrics = FeedMetrics(), families = HomeMembers()
        metrics.countMembers(of: families)
        for user in ["a", "b", "b"] { metrics.recordBatch("home.\(user)") }
        metrics.recordBatch("news")
        metrics.setSubscribers("home.a", 2)
        metrics.setSubscribers("home.b", 1)
        metrics.setSubscribers("news", 4)
        var series = Self.series(metrics)
        #expect(series["diffstream_family_batches_total{family=home}"] == 3)
        #expect(series["diffstream_family_subscribers{family=home}"] == 3)
        #expect(series["diffstream_feed_batches_total{feed=news}"] == 1)
        #expect(series["diffstream_feed_subscribers{feed=news}"] == 4)
        #expect(!series.keys.contains { $0.contains("home.") }, "no series of a member")

        metrics.removeFeed("home.a")
        metrics.removeFeed("news")
        series = Self.series(metrics)
        #expect(series["diffstream_family_batches_total{family=home}"] == 3, "a counter: the dropped member's batches stay counted")
        #expect(series["diffstream_family_subscribers{family=home}"] == 1)
        #expect(!series.keys.contains { $0.contains("news") }, "a deleted or dropped feed's series go")
    }

    @Test func withoutFamiliesEveryFeedIsItsOwnSeries() {
        let metrics = FeedMetrics()
        metrics.recordBatch("home.a")
        #expect(Self.series(metrics)["diffstream_feed_batches_total{feed=home.a}"] == 1)
    }
}
