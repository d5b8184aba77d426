import DiffStream
import DiffStreamJSON
import FeedCore
import ViewModelHosting

/// An hourly section and a daily section. Selecting a day marks it in the daily list and shows its
/// hours; the hour items keep their identity (the hour of the day), so only hours whose icon or
/// temperature differ between the two days are updated.
public struct ForecastViewModel: HostedViewModel {
    public struct Day: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var high: Int
        public var low: Int
        public var icon: String
        public var hours: [Hour]
    }

    public struct Hour: Codable, Sendable, Equatable {
        public var hour: Int
        public var temp: Int
        public var icon: String
    }

    public enum ForecastSection: Identifiable, Equatable, WireSectionConvertible {
        case hourly(dayName: String)
        case daily
        public var id: String {
            switch self {
            case .hourly: "hourly"
            case .daily: "daily"
            }
        }
        public var wireSection: WireSection {
            switch self {
            case .hourly(let name): WireSection(id: id, model: ["title": .string("Hourly · \(name)")])
            case .daily: WireSection(id: id, model: ["title": "Daily"])
            }
        }
    }

    public enum ForecastItem: Identifiable, Equatable, WireItemConvertible {
        case hour(Hour)
        case day(Day, selected: Bool)
        public var id: String {
            switch self {
            case .hour(let hour): "h-\(hour.hour < 10 ? "0" : "")\(hour.hour)"
            case .day(let day, _): day.id
            }
        }
        public var wireItem: WireItem {
            switch self {
            case .hour(let hour):
                WireItem(id: id, kind: "hour", model: ["hour": .string("\(hour.hour < 10 ? "0" : "")\(hour.hour):00"), "temp": .number(Double(hour.temp)), "icon": .string(hour.icon)])
            case .day(let day, let selected):
                WireItem(id: id, kind: "day", model: ["name": .string(day.name), "high": .number(Double(day.high)), "low": .number(Double(day.low)), "icon": .string(day.icon), "selected": .bool(selected)])
            }
        }
    }

    public struct State: Codable, Sendable, Equatable {
        public var days: [Day]
        public var selectedDay: String

        /// Selects a day by its item id.
        public mutating func select(day: String) throws {
            guard days.contains(where: { $0.id == day }) else {
                throw InvalidInput(field: "day", "unknown day '\(day.prefix(80))' (expected one of \(days.map(\.id).joined(separator: ", ")))")
            }
            selectedDay = day
        }
    }

    struct SelectInput: Decodable { var day: String }

    public init() {}

    public var initialState: State { Self.sample }

    public var actions: [HostedAction<State>] {
        [HostedAction("select", input: SelectInput.self, fields: [.item("day", kind: "day")], isPublic: true) { state, input in
            try state.select(day: input.day)
        }]
    }

    /// Five days of sample data; neighbouring days share some hours exactly.
    public static let sample: State = {
        let names = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
        let icons = ["☀️", "⛅", "☁️", "🌧️"]
        let days = names.enumerated().map { index, name in
            let hours = stride(from: 6, through: 21, by: 3).enumerated().map { slot, hour in
                // Hours in even slots follow the day, others are shared by all days.
                slot % 2 == 0
                    ? Hour(hour: hour, temp: 10 + index * 2 + slot, icon: icons[(index + slot) % icons.count])
                    : Hour(hour: hour, temp: 12 + slot, icon: icons[slot % icons.count])
            }
            return Day(id: "d-\(name.prefix(3).lowercased())", name: name, high: 16 + index, low: 8 + index % 3, icon: icons[index % icons.count], hours: hours)
        }
        return State(days: days, selectedDay: days[0].id)
    }()

    public func render(_ state: State) throws -> Snapshot<ForecastSection, ForecastItem> {
        let days = state.days
        guard let selected = days.first(where: { $0.id == state.selectedDay }) ?? days.first else { return Snapshot() }
        return try Snapshot {
            Section(ForecastSection.hourly(dayName: selected.name)) {
                for hour in selected.hours { ForecastItem.hour(hour) }
            }
            Section(ForecastSection.daily) {
                for day in days { ForecastItem.day(day, selected: day.id == selected.id) }
            }
        }
    }
}
