import DiffStreamExamples
import DiffStreamJSON
import DiffStreamTesting
import FeedServer
import Testing

/// The home family driven through `FamilyHarness` (issue 38): made, changed, dropped, made again, and
/// what a client resuming from its last position gets.
struct FamilyHarnessTests {
    func homes(keeping: Bool = true, truth: FamilyTruth = .program) throws -> FamilyHarness<HomeViewModel> {
        try FamilyHarness(HomeViewModel(), prefix: "home", truth: truth, keeping: keeping) { member in HomeFamily.state(for: member.key) }
    }

    @Test func aMemberMadeAgainGoesOnWithOneBatchOfWhatChanged() async throws {
        let homes = try homes()
        let first = try await homes.make("alice")
        // A change the program made (its data changed, then went back): with .program a PATCH is refused,
        // the loader's render being the truth (FamilyWritesTests).
        #expect(try await homes.family.update("alice") { $0.banner = nil }.version == 2)
        let position = try #require(await homes.position("alice"))
        let patched = await homes.screen("alice")
        await homes.drop("alice")
        #expect(await homes.family.liveCount == 0)
        // The program's data is the truth: its render brings the banner back, one batch after 2.
        guard case .batches(let batches) = try await homes.resume("alice", from: position) else {
            Issue.record("a snapshot, not the batch of what changed")
            return
        }
        #expect(batches.count == 1)
        #expect(try patched.applying(batches[0]) == first)
        #expect(await homes.screen("alice") == first)
        #expect(await homes.position("alice")?.hasSuffix(".3") == true)
    }

    @Test func withStateKeptTheLoaderDoesNotRunAgain() async throws {
        let homes = try homes(truth: .kept)
        try await homes.make("bob")
        try await homes.patch("bob", json: #"{"banner":null}"#)
        let position = try #require(await homes.position("bob"))
        await homes.drop("bob")
        #expect(try await homes.resume("bob", from: position) == .batches([]), "nothing changed: the state kept is restored")
        #expect(await homes.position("bob") == position)
    }

    @Test func inMemoryAMemberMadeAgainStartsANewHistory() async throws {
        let homes = try homes(keeping: false)
        try await homes.make("carol")
        let position = try #require(await homes.position("carol"))
        await homes.drop("carol")
        guard case .snapshot(let snapshot) = try await homes.resume("carol", from: position) else {
            Issue.record("batches across a new history")
            return
        }
        #expect(snapshot == (await homes.screen("carol")))
        #expect(await homes.position("carol") != position)
    }
}
