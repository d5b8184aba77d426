import FeedCore
import ViewModelHosting

/// The example view models, hosted through the public API only.
public enum Examples {
    /// Every example's feed name.
    public static let names = ["home", "week", "blackjack", "forecast", "todo"]

    /// Hosts the named examples. With `demo`, the home feed takes a demo step every 2 s, every user's
    /// home feed follows a new edition of the catalogue every 20 s (one family-wide source), and the
    /// week follows the simulated weather service (a reading every 3 s); the returned tasks drive them.
    /// `home` also hosts the family `home.<user>`: each user's home feed, built by ``HomeFamily``.
    @discardableResult
    public static func host(_ selected: [String], on feeds: HostedFeeds, demo: Bool, familyLimits: FamilyLimits = FamilyLimits()) async throws(HostingError) -> [Task<Void, any Error>] {
        var sources: [Task<Void, any Error>] = []
        for name in selected {
            switch name {
            case "home":
                let home = try await feeds.host(HomeViewModel(), as: name)
                let family = try await feeds.host(family: name, HomeViewModel(), limits: familyLimits) { member in HomeFamily.state(for: member.key) }
                if demo {
                    sources.append(home.follow(Ticks(every: .seconds(2)).stream()) { state, step in HomeViewModel.demoStep(step, &state) })
                    sources.append(family.follow(Ticks(every: .seconds(20)).stream()) { state, tick, user in HomeFamily.apply(edition: tick + 1, to: &state, user: user) })
                }
            case "week":
                let week = try await feeds.host(WeekViewModel(), as: name)
                if demo {
                    sources.append(week.follow(WeatherService(every: .seconds(3)).readings()) { state, reading in state.apply(reading) })
                }
            case "blackjack":
                try await feeds.host(BlackjackViewModel(), as: name)
            case "forecast":
                try await feeds.host(ForecastViewModel(), as: name)
            case "todo":
                try await feeds.host(TodoViewModel(), as: name)
            default:
                throw HostingError(description: "there is no example named '\(name)' (the examples: \(names.joined(separator: ", ")))")
            }
        }
        return sources
    }
}

/// 0, 1, 2, … one number per interval, until the consuming task is cancelled.
public struct Ticks: Sendable {
    public var interval: Duration

    public init(every interval: Duration) { self.interval = interval }

    public func stream() -> AsyncStream<Int> {
        let interval = interval
        return AsyncStream { continuation in
            let producer = Task {
                var next = 0
                while true {
                    try await Task.sleep(for: interval)
                    continuation.yield(next)
                    next += 1
                }
            }
            continuation.onTermination = { _ in producer.cancel() }
        }
    }
}
