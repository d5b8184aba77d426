import DiffStreamJSON
import HTTPServer

/// All feeds by name. Creating, replacing and deleting are atomic with respect to each other.
public actor FeedRegistry {
    private var feeds: [String: Feed] = [:]
    private let replayLimit: Int
    private let server: HTTPServer?
    public nonisolated let metrics: FeedMetrics

    public init(replayLimit: Int = 1024, server: HTTPServer?, metrics: FeedMetrics = FeedMetrics()) {
        self.replayLimit = replayLimit
        self.server = server
        self.metrics = metrics
    }

    public func feed(_ name: String) -> Feed? { feeds[name] }

    /// Names and versions, sorted by name.
    public func list() async -> [(name: String, version: Int)] {
        var result: [(String, Int)] = []
        for (name, feed) in feeds.sorted(by: { $0.key < $1.key }) { result.append((name, await feed.version)) }
        return result
    }

    /// Creates the feed at version 1, or publishes the snapshot to the existing one.
    public func put(_ name: String, snapshot: WireSnapshot) async -> (created: Bool, version: Int, operations: Int) {
        if let feed = feeds[name] {
            let result = await feed.publish(snapshot)
            return (false, result.version, result.operations)
        }
        let feed = Feed(name: name, snapshot: snapshot, replayLimit: replayLimit, server: server, metrics: metrics)
        feeds[name] = feed
        metrics.setSubscribers(name, 0)
        return (true, 1, snapshot.numberOfSections + snapshot.numberOfItems)
    }

    /// Removes a feed; its subscribers get `event: deleted`. False if there was none.
    public func delete(_ name: String) async -> Bool {
        guard let feed = feeds.removeValue(forKey: name) else { return false }
        await feed.delete()
        return true
    }
}
