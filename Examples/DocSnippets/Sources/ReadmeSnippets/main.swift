// README.md, "A view model in Swift", verbatim:
import DiffStream
import DiffStreamJSON

struct Home {
    var banner: Banner?
    var suggested: [Media]

    func render() throws -> Snapshot<HomeSection, HomeItem> {
        try Snapshot {
            if let banner { Section(HomeSection.banner) { HomeItem.banner(banner) } }
            if !suggested.isEmpty {
                Section(HomeSection.suggested) { for m in suggested { HomeItem.suggested(m) } }
            }
        }
    }
}

let batch = Snapshot.diff(from: try old.render(), to: try new.render())   // minimal, O(n log n)
try snapshot.apply(batch)                                                  // what a client does

// Support: what README.md's "Swift client" takes for granted.
import DiffStreamClient
import Foundation

// README.md, "Swift client", verbatim:
let client = FeedClient(baseURL: URL(string: "http://127.0.0.1:8080")!, token: nil)
for try await event in client.snapshots(of: "week", as: Snapshot<WeekSection, Day>.self) {
    if case .update(let update) = event { show(update.snapshot, reconfiguring: update.changedItemIDs) }
}
try await client.perform("toggle", on: "todo", input: Toggle(id: "t3"))
