/// The home feed of each user, `home.<user>`: ``HomeViewModel`` hosted as a family whose loader is
/// ``state(for:)``. It stands for a program's database with a small simulated catalogue: each user
/// gets a banner with their name, and suggested and recommended media picked from the catalogue by
/// their key, the same every time, different between users.
public enum HomeFamily {
    /// The family's prefix: members are `home.<user>`, beside the shared `home` feed.
    public static let prefix = "home"

    /// The simulated catalogue the picks come from.
    public static let catalogue: [HomeViewModel.Media] = [
        .init(id: "c1", type: .image, title: "Northern lights", url: "/media/c1.jpg"),
        .init(id: "c2", type: .video, title: "Ocean waves", url: "/media/c2.mp4"),
        .init(id: "c3", type: .image, title: "Desert dunes", url: "/media/c3.jpg"),
        .init(id: "c4", type: .image, title: "City at night", url: "/media/c4.jpg"),
        .init(id: "c5", type: .video, title: "Mountain trail", url: "/media/c5.mp4"),
        .init(id: "c6", type: .image, title: "Autumn forest", url: "/media/c6.jpg"),
        .init(id: "c7", type: .image, title: "Snowy peaks", url: "/media/c7.jpg"),
        .init(id: "c8", type: .image, title: "Coral reef", url: "/media/c8.jpg"),
        .init(id: "c9", type: .video, title: "Rainy street", url: "/media/c9.mp4"),
        .init(id: "c10", type: .image, title: "Lavender field", url: "/media/c10.jpg"),
        .init(id: "c11", type: .video, title: "Night train", url: "/media/c11.mp4"),
        .init(id: "c12", type: .image, title: "Old harbour", url: "/media/c12.jpg"),
        .init(id: "c13", type: .video, title: "Bamboo grove", url: "/media/c13.mp4"),
        .init(id: "c14", type: .image, title: "Salt flats", url: "/media/c14.jpg"),
        .init(id: "c15", type: .image, title: "Glacier lagoon", url: "/media/c15.jpg"),
        .init(id: "c16", type: .video, title: "Street market", url: "/media/c16.mp4"),
    ]

    /// How many media each section gets.
    public static let picks = 4

    /// The home state of the user whose key is `user`: a banner naming them, ``picks`` suggested media
    /// and ``picks`` recommended ones (no media in both), chosen by a stable hash of the key.
    /// - Complexity: O(c) in the catalogue's size.
    public static func state(for user: String) -> HomeViewModel.State {
        let name = displayName(of: user)
        let chosen = choose(for: user, from: catalogue)
        return HomeViewModel.State(
            banner: HomeViewModel.Banner(id: "welcome-\(user)", title: "Welcome back, \(name)", subtitle: "Picked for \(name) from \(catalogue.count) media"),
            suggested: chosen.suggested,
            recommended: chosen.recommended,
            recommendedHeader: HomeViewModel.Header(title: "Recommended for \(name)", isFeatured: false))
    }

    /// ``picks`` suggested and ``picks`` recommended media of `catalogue` for `user` (none in both),
    /// chosen by a stable hash of the key.
    /// - Complexity: O(c) in the catalogue's size.
    public static func choose(for user: String, from catalogue: [HomeViewModel.Media]) -> (suggested: [HomeViewModel.Media], recommended: [HomeViewModel.Media]) {
        var generator = KeyedGenerator(key: user)
        var pool = catalogue
        var chosen: [HomeViewModel.Media] = []
        for _ in 0..<min(2 * picks, pool.count) {
            chosen.append(pool.remove(at: Int(generator.next() % UInt64(pool.count))))
        }
        return (Array(chosen.prefix(picks)), Array(chosen.dropFirst(picks)))
    }

    /// The catalogue after `edition` changes of the demo's simulated catalogue (0: ``catalogue``): each
    /// edition adds a new arrival first and rotates the rest by one, so every user's picks move.
    public static func catalogue(edition: Int) -> [HomeViewModel.Media] {
        guard edition > 0 else { return catalogue }
        let shift = edition % catalogue.count
        let fresh = catalogue[(edition - 1) % catalogue.count]
        let arrival = HomeViewModel.Media(id: "new-\(edition)", type: fresh.type, title: "New arrival \(edition)", url: fresh.url)
        return [arrival] + Array(catalogue[shift...] + catalogue[..<shift])
    }

    /// The family-wide change of a new catalogue edition (``ViewModelFamily/follow(_:update:)``):
    /// `user`'s picks from it; what the user changed elsewhere (the banner, the header) stays. Applying
    /// it again changes nothing.
    public static func apply(edition: Int, to state: inout HomeViewModel.State, user: String) {
        let chosen = choose(for: user, from: catalogue(edition: edition))
        state.suggested = chosen.suggested
        state.recommended = chosen.recommended
    }

    /// The name a user is greeted with: their key with its first letter capitalized (`alice` → `Alice`).
    public static func displayName(of user: String) -> String {
        user.prefix(1).uppercased() + user.dropFirst()
    }

    /// SplitMix64 seeded with the FNV-1a hash of a key: the same picks for a key on every run and
    /// every platform (Swift's `Hasher` is seeded per process, and its shuffles may change between versions).
    struct KeyedGenerator {
        var state: UInt64

        init(key: String) {
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
            state = hash
        }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
