import DiffStream
import DiffStreamJSON
import FeedCore
import ViewModelHosting

/// A seven-day weather list in one section, driven by a weather service (``WeatherService``): each
/// reading changes a few days, and only those get `update` operations.
public struct WeekViewModel: HostedViewModel {
    public struct Day: Codable, Sendable, Equatable, Identifiable, WireItemConvertible {
        public var id: String
        public var name: String
        public var high: Int
        public var low: Int
        public var condition: Condition

        public var wireItem: WireItem {
            WireItem(id: id, kind: "day", model: [
                "name": .string(name), "high": .number(Double(high)), "low": .number(Double(low)),
                "condition": .string(condition.rawValue), "icon": .string(condition.icon),
            ])
        }
    }

    public enum Condition: String, Codable, Sendable, CaseIterable {
        case sunny = "Sunny", cloudy = "Cloudy", rain = "Rain", storm = "Storm", snow = "Snow", partlyCloudy = "Partly cloudy"
        var icon: String {
            switch self {
            case .sunny: "☀️"
            case .cloudy: "☁️"
            case .rain: "🌧️"
            case .storm: "⛈️"
            case .snow: "❄️"
            case .partlyCloudy: "⛅"
            }
        }
    }

    public struct WeekSection: Identifiable, Equatable, WireSectionConvertible {
        public var id = "days"
        public var wireSection: WireSection { WireSection(id: id, model: ["title": "This week"]) }
    }

    public struct State: Codable, Sendable, Equatable {
        public var days: [Day]

        /// Takes a reading: the days it names get its values.
        public mutating func apply(_ reading: [Day]) {
            for day in reading {
                if let index = days.firstIndex(where: { $0.id == day.id }) { days[index] = day }
            }
        }
    }

    public init() {}

    public var initialState: State { Self.sample }

    public func render(_ state: State) throws -> Snapshot<WeekSection, Day> {
        try Snapshot {
            Section(WeekSection()) { state.days }
        }
    }

    public static let sample = State(days: zip(["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]).enumerated().map { index, names in
        Day(id: "day-\(names.0)", name: names.1, high: 18 + index % 4, low: 9 + index % 3, condition: Condition.allCases[index % Condition.allCases.count])
    })
}

/// A simulated weather service: an asynchronous sequence of readings, each the new values of one to
/// three days. Host the week with it as a source:
/// `host.follow(WeatherService(every: .seconds(3)).readings()) { state, reading in state.apply(reading) }`.
public struct WeatherService: Sendable {
    public var interval: Duration
    public var start: WeekViewModel.State

    public init(every interval: Duration, start: WeekViewModel.State = WeekViewModel.sample) {
        self.interval = interval
        self.start = start
    }

    /// Readings until the consuming task is cancelled.
    public func readings() -> AsyncStream<[WeekViewModel.Day]> {
        let interval = interval
        let start = start.days
        return AsyncStream { continuation in
            let producer = Task {
                var days = start
                var generator = SystemRandomNumberGenerator()
                while true {
                    try await Task.sleep(for: interval)
                    continuation.yield(Self.next(&days, using: &generator))
                }
            }
            continuation.onTermination = { _ in producer.cancel() }
        }
    }

    /// One reading: one to three days change, and the reading holds their new values.
    public static func next(_ days: inout [WeekViewModel.Day], using generator: inout some RandomNumberGenerator) -> [WeekViewModel.Day] {
        guard !days.isEmpty else { return [] }
        var changed: [Int] = []
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let index = Int.random(in: 0..<days.count, using: &generator)
            days[index].high += Int.random(in: -2...2, using: &generator)
            days[index].low = min(days[index].high - 3, days[index].low + Int.random(in: -1...1, using: &generator))
            if Bool.random(using: &generator), let condition = WeekViewModel.Condition.allCases.randomElement(using: &generator) {
                days[index].condition = condition
            }
            if !changed.contains(index) { changed.append(index) }
        }
        return changed.map { days[$0] }
    }
}
