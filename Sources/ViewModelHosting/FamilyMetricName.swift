import FeedCore

/// The metrics of view-model families (issue 38), each labelled by family (never by member), with their
/// `# HELP` texts: `/metrics` joins them to the feed core's list (``MetricName/help``).
public enum FamilyMetricName {
    /// Live members of each family.
    public static let live = "diffstream_family_live"
    /// Members made by their loader, and members dropped.
    public static let made = "diffstream_family_made_total"
    public static let dropped = "diffstream_family_dropped_total"
    public static let loaderErrors = "diffstream_family_loader_errors_total"
    public static let refusedFull = "diffstream_family_refused_full_total"
    public static let loaderDuration = "diffstream_family_loader_seconds"
    /// The lease shards of each family this instance holds, with a store several instances share.
    public static let shardsHeld = "diffstream_family_shards_held"
    /// Kept states of hosted view models that the program could neither decode nor migrate, by family
    /// (or by feed, for a view model hosted on its own): each was left as it is and its feed not made.
    public static let keptStateUnreadable = "diffstream_kept_state_unreadable_total"

    /// `# HELP` texts by name.
    package static let help: [String: String] = [
        live: "Live members of each family (per-user view models made on first use).",
        made: "Family members made by their loader.",
        dropped: "Family members dropped as idle or to make room.",
        loaderErrors: "Family loads that failed or timed out.",
        refusedFull: "Requests refused with 503 because the family had its most live members.",
        loaderDuration: "Time a family's loader took to make a member.",
        shardsHeld: "Lease shards of each family this instance holds: their members' sources run here (with a shared store).",
        keptStateUnreadable: "Kept view-model states the program could neither decode nor migrate (left as they are, the feed not made), by family or feed.",
    ]
}

/// The names as the feed core listed them before issue 53; deprecated for one release.
extension MetricName {
    @available(*, deprecated, renamed: "FamilyMetricName.live") public static var familyLive: String { FamilyMetricName.live }
    @available(*, deprecated, renamed: "FamilyMetricName.made") public static var familyMade: String { FamilyMetricName.made }
    @available(*, deprecated, renamed: "FamilyMetricName.dropped") public static var familyDropped: String { FamilyMetricName.dropped }
    @available(*, deprecated, renamed: "FamilyMetricName.loaderErrors") public static var familyLoaderErrors: String { FamilyMetricName.loaderErrors }
    @available(*, deprecated, renamed: "FamilyMetricName.refusedFull") public static var familyRefusedFull: String { FamilyMetricName.refusedFull }
    @available(*, deprecated, renamed: "FamilyMetricName.loaderDuration") public static var familyLoaderDuration: String { FamilyMetricName.loaderDuration }
    @available(*, deprecated, renamed: "FamilyMetricName.shardsHeld") public static var familyShardsHeld: String { FamilyMetricName.shardsHeld }
    @available(*, deprecated, renamed: "FamilyMetricName.keptStateUnreadable") public static var keptStateUnreadable: String { FamilyMetricName.keptStateUnreadable }
}
