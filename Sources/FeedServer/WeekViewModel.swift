import DiffStream
import DiffStreamJSON

/// A seven-day weather list in one section, fed by a simulated weather service: each reading changes
/// a few days, and only those get `update` operations.
public struct WeekViewModel: Sendable, Equatable {
    public struct Day: Sendable, Equatable, Identifiable, WireItemConvertible {
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

    public enum Condition: String, Sendable, CaseIterable {
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

    struct WeekSection: Identifiable, Equatable, WireSectionConvertible {
        var id = "days"
        var wireSection: WireSection { WireSection(id: id, model: ["title": "This week"]) }
    }

    public var days: [Day]

    public init(days: [Day]) { self.days = days }

    public static let sample = WeekViewModel(days: zip(["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]).enumerated().map { index, names in
        Day(id: "day-\(names.0)", name: names.1, high: 18 + index % 4, low: 9 + index % 3, condition: Condition.allCases[index % Condition.allCases.count])
    })

    public func render() throws -> WireSnapshot {
        try Snapshot<WeekSection, Day> {
            Section(WeekSection()) { days }
        }.wireSnapshot()
    }

    /// One reading of the simulated weather service: one to three days change.
    public mutating func simulate(using generator: inout some RandomNumberGenerator) {
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let index = Int.random(in: 0..<days.count, using: &generator)
            days[index].high += Int.random(in: -2...2, using: &generator)
            days[index].low = min(days[index].high - 3, days[index].low + Int.random(in: -1...1, using: &generator))
            if Bool.random(using: &generator) { days[index].condition = Condition.allCases.randomElement(using: &generator)! }
        }
    }
}
