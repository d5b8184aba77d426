import DiffStream
import DiffStreamJSON

/// An hourly section and a daily section. Selecting a day marks it in the daily list and shows its
/// hours; the hour items keep their identity (the hour of the day), so only hours whose icon or
/// temperature differ between the two days are updated.
public struct ForecastViewModel: Sendable, Equatable {
    public struct Day: Sendable, Equatable {
        public var id: String
        public var name: String
        public var high: Int
        public var low: Int
        public var icon: String
        public var hours: [Hour]
    }

    public struct Hour: Sendable, Equatable {
        public var hour: Int
        public var temp: Int
        public var icon: String
    }

    enum ForecastSection: Identifiable, Equatable, WireSectionConvertible {
        case hourly(dayName: String)
        case daily
        var id: String {
            switch self {
            case .hourly: "hourly"
            case .daily: "daily"
            }
        }
        var wireSection: WireSection {
            switch self {
            case .hourly(let name): WireSection(id: id, model: ["title": .string("Hourly · \(name)")])
            case .daily: WireSection(id: id, model: ["title": "Daily"])
            }
        }
    }

    enum ForecastItem: Identifiable, Equatable, WireItemConvertible {
        case hour(Hour)
        case day(Day, selected: Bool)
        var id: String {
            switch self {
            case .hour(let hour): "h-\(hour.hour < 10 ? "0" : "")\(hour.hour)"
            case .day(let day, _): day.id
            }
        }
        var wireItem: WireItem {
            switch self {
            case .hour(let hour):
                WireItem(id: id, kind: "hour", model: ["hour": .string("\(hour.hour < 10 ? "0" : "")\(hour.hour):00"), "temp": .number(Double(hour.temp)), "icon": .string(hour.icon)])
            case .day(let day, let selected):
                WireItem(id: id, kind: "day", model: ["name": .string(day.name), "high": .number(Double(day.high)), "low": .number(Double(day.low)), "icon": .string(day.icon), "selected": .bool(selected)])
            }
        }
    }

    public var days: [Day]
    public var selectedDay: String

    /// Five days of sample data; neighbouring days share some hours exactly.
    public static let sample: ForecastViewModel = {
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
        return ForecastViewModel(days: days, selectedDay: days[0].id)
    }()

    public func render() throws -> WireSnapshot {
        let selected = days.first { $0.id == selectedDay } ?? days[0]
        return try Snapshot<ForecastSection, ForecastItem> {
            Section(ForecastSection.hourly(dayName: selected.name)) {
                for hour in selected.hours { ForecastItem.hour(hour) }
            }
            Section(ForecastSection.daily) {
                for day in days { ForecastItem.day(day, selected: day.id == selected.id) }
            }
        }.wireSnapshot()
    }

    /// Selects a day by its item id.
    public mutating func select(day: String) throws(APIError) {
        guard days.contains(where: { $0.id == day }) else {
            throw .invalidField("day", "unknown day '\(day)' (expected one of \(days.map(\.id).joined(separator: ", ")))")
        }
        selectedDay = day
    }
}
