// docs/client-swift.md, "The week list, rewritten on the client", verbatim (UIKit: the stand-in module on Linux):
import DiffStreamClient
import UIKit

struct WeekSection: Identifiable, Hashable, Decodable, Sendable {
    var id: String
    var model: Title
    struct Title: Hashable, Decodable, Sendable { var title: String }
}

struct Day: Identifiable, Hashable, Decodable, Sendable {
    var id: String
    var model: Forecast
    struct Forecast: Hashable, Decodable, Sendable { var name: String; var high: Int; var low: Int; var condition: String; var icon: String }
}

@MainActor
final class WeekViewModel {
    private let client: FeedClient
    private(set) var days: Snapshot<WeekSection, Day> = Snapshot()
    let dataSource: UITableViewDiffableDataSource<String, String>
    var status: String = ""

    init(client: FeedClient, dataSource: UITableViewDiffableDataSource<String, String>) {
        self.client = client
        self.dataSource = dataSource
    }

    func follow() async {
        do {
            for try await event in client.snapshots(of: "week", as: Snapshot<WeekSection, Day>.self) {
                switch event {
                case .update(let update): apply(update)
                case .connection(let state): status = "\(state)"
                default: break
                }
            }
        } catch { status = "\(error)" }
    }

    func day(withID id: String) -> Day? { days.item(withID: id) }   // the cell provider's look-up

    private func apply(_ update: FeedUpdate<WeekSection, Day>) {
        days = update.snapshot
        var snapshot = NSDiffableDataSourceSnapshot<String, String>()
        snapshot.appendSections(update.snapshot.sectionIDs)
        for section in update.snapshot.sections {
            snapshot.appendItems(update.snapshot.items(inSection: section.id)?.map(\.id) ?? [], toSection: section.id)
        }
        if !update.isFull {
            snapshot.reconfigureItems(update.changedItemIDs)    // only the days that changed
        }
        dataSource.apply(snapshot, animatingDifferences: !update.isFull)
    }
}
