import DiffStreamJSON

/// Owns the state of the example view models and publishes each change as one snapshot (hence one
/// batch) to its feed.
public actor ViewModelFeeds {
    /// The feeds rendered by view models (not writable with PUT or DELETE).
    public static let names: Set<String> = ["home", "week", "blackjack", "forecast"]

    private let registry: FeedRegistry
    public private(set) var home = HomeViewModel.sample
    public private(set) var week = WeekViewModel.sample
    public private(set) var blackjack = BlackjackViewModel()
    public private(set) var forecast = ForecastViewModel.sample
    private var generator = SystemRandomNumberGenerator()
    private var demoStep = 0

    public init(registry: FeedRegistry) {
        self.registry = registry
    }

    /// Creates the four feeds.
    public func publishAll() async throws {
        blackjack.deal(using: &generator)
        try await publish("home", home.render())
        try await publish("week", week.render())
        try await publish("blackjack", blackjack.render())
        try await publish("forecast", forecast.render())
    }

    @discardableResult
    private func publish(_ name: String, _ snapshot: WireSnapshot) async -> Int {
        await registry.put(name, snapshot: snapshot).operations
    }

    /// `PATCH /feeds/home`. Returns the number of operations published.
    public func patchHome(_ patch: JSONValue) async throws(APIError) -> Int {
        var next = home
        try next.apply(patch: patch)
        let snapshot: WireSnapshot
        do { snapshot = try next.render() } catch { throw APIError(.unprocessableContent, "invalid state", "\(error)") }
        home = next
        return await publish("home", snapshot)
    }

    /// `POST /feeds/blackjack/actions/deal`.
    public func deal() async -> Int {
        blackjack.deal(using: &generator)
        return await publish("blackjack", (try? blackjack.render()) ?? WireSnapshot())
    }

    /// `POST /feeds/forecast/actions/select`.
    public func select(day: String) async throws(APIError) -> Int {
        try forecast.select(day: day)
        return await publish("forecast", (try? forecast.render()) ?? WireSnapshot())
    }

    /// One reading of the simulated weather service.
    public func simulateWeather() async {
        week.simulate(using: &generator)
        _ = await publish("week", (try? week.render()) ?? WireSnapshot())
    }

    /// One step of the home demo: banner on and off, inserts, removes, moves across sections, title
    /// updates and the header star, in a cycle.
    public func demoTick() async {
        var next = home
        let pool: [HomeViewModel.Media] = [
            .init(id: "m8", type: .image, title: "Coral reef", url: "/media/m8.jpg"),
            .init(id: "m9", type: .video, title: "Rainy street", url: "/media/m9.mp4"),
            .init(id: "m10", type: .image, title: "Lavender field", url: "/media/m10.jpg"),
        ]
        switch demoStep % 8 {
        case 0:
            next.banner = next.banner == nil ? HomeViewModel.sample.banner : nil
        case 1:
            if let extra = pool.first(where: { media in !next.suggested.contains { $0.id == media.id } }) {
                next.suggested.insert(extra, at: min(1, next.suggested.count))
            }
        case 2:
            if next.recommended.count > 1 { next.recommended.append(next.recommended.removeFirst()) }
        case 3:
            if let moved = next.suggested.last, !next.recommended.contains(where: { $0.id == moved.id }) {
                next.suggested.removeLast()
                next.recommended.insert(moved, at: 0)
            }
        case 4:
            if !next.suggested.isEmpty {
                let index = demoStep % next.suggested.count
                let base = next.suggested[index].title.split(separator: " · ").first.map(String.init) ?? ""
                next.suggested[index].title = "\(base) · \(demoStep)"
            }
        case 5:
            next.recommendedHeader.isFeatured.toggle()
        case 6:
            if let moved = next.recommended.first, !next.suggested.contains(where: { $0.id == moved.id }), next.recommended.count > 2 {
                next.recommended.removeFirst()
                next.suggested.append(moved)
            }
        default:
            if next.suggested.count > 3 { next.suggested.remove(at: 1) }
        }
        demoStep += 1
        guard let snapshot = try? next.render() else { return }
        home = next
        _ = await publish("home", snapshot)
    }
}
