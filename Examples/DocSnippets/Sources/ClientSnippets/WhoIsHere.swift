// docs/client-swift.md, "Who is here", verbatim, as the body of a function.
import DiffStreamClient

func whoIsHere(_ client: FeedClient) async throws {
// "2 watching: Alice, Bob", each time someone joins or leaves the board.
for try await event in client.snapshots(of: "_presence.board", as: Snapshot<PresenceSummary, PresenceMember>.self) {
    guard case .update(let update) = event else { continue }
    let count = update.snapshot.sections.first?.count ?? 0
    print("\(count) watching: \(update.snapshot.items.map { $0.name ?? "someone" }.joined(separator: ", "))")
}
}
