import DiffStream
import DiffStreamClient
import DiffStreamJSON

/// The terminal view of `watch`: each feed's sections with their titles, items with kind and a short
/// model; what the last batch changed is marked (inverse video) until the next update.
struct WatchView {
    var feeds: [String]
    var state = "connecting"
    /// Feeds whose server cannot reach its store (`event: unavailable`), with the server's detail.
    var unavailable: [String: String] = [:]
    private var updates: [String: WireFeedUpdate] = [:]
    private var highlighted: [String: Set<WireID>] = [:]
    /// Presence feeds, followed with the client's types for them (``apply(presence:)``).
    private var present: [String: FeedUpdate<PresenceSummary, PresenceMember>] = [:]
    private var joined: [String: Set<String>] = [:]

    init(feeds: [String]) { self.feeds = feeds }

    mutating func apply(_ update: WireFeedUpdate) {
        updates[update.feed] = update
        var changed = Set<WireID>()
        for operation in update.operations {
            switch operation {
            case .insert(let item, _, _), .update(let item): changed.insert(item.id)
            case .move(let id, _, _): changed.insert(id)
            case .insertSection(let section, _), .updateSection(let section): changed.insert(section.id)
            case .moveSection(let id, _): changed.insert(id)
            case .delete, .deleteSection: break
            }
        }
        highlighted[update.feed] = changed
    }

    /// A presence feed's update (`_presence.F`): who is watching, each user a line; who joined since the
    /// last update is marked.
    mutating func apply(presence update: FeedUpdate<PresenceSummary, PresenceMember>) {
        let before = present[update.feed].map(Self.members) ?? []
        present[update.feed] = update
        joined[update.feed] = update.isFull ? [] : Self.members(update).subtracting(before)
    }

    /// The ids of the users a presence feed's update lists.
    static func members(_ update: FeedUpdate<PresenceSummary, PresenceMember>) -> Set<String> {
        Set(update.snapshot.itemIDs)
    }

    /// A presence feed's lines: `_presence.board v3: 2 watching` (`130 watching, 100 listed`), then a
    /// line per listed user: the name and subject where the server shows them, the streams, and when
    /// they joined (UTC).
    static func presenceLines(_ update: FeedUpdate<PresenceSummary, PresenceMember>, title: String, marked: Set<String>, styled: Bool) -> [String] {
        let summary = update.snapshot.sections.first
        let count = summary?.count ?? 0
        let listed = summary?.listed ?? count
        var lines = ["\(title) v\(update.version)\(update.isStale ? " (cached, stale)" : ""): \(count) watching\(listed < count ? ", \(listed) listed" : "")"]
        for member in update.snapshot.items {
            var who = member.name ?? "(no name)"
            if let subject = member.subject { who += " <\(subject)>" }
            let seconds = Int(member.since) % 86_400
            let since = [seconds / 3600, seconds / 60 % 60, seconds % 60].map { $0 < 10 ? "0\($0)" : "\($0)" }.joined(separator: ":")
            let streams = member.connections == 1 ? "1 stream" : "\(member.connections) streams"
            lines.append(mark("    \(who) · \(streams) · since \(since) UTC · \(member.id.prefix(8))", marked.contains(member.id) && styled))
        }
        return lines
    }

    /// The view as lines; `styled`: with the terminal's bold and inverse video (control codes).
    /// `status`: with the state (`[live]`) first, the feeds not shown yet (`(waiting)`) and the outage
    /// marks, as the live view on a terminal shows them; without, the feeds' data only (for a pipe or a
    /// file, while the state goes to standard error). A cached snapshot is marked `(cached, stale)`
    /// either way: that says which data it is.
    func render(styled: Bool = true, status: Bool = true) -> String {
        var lines: [String] = status ? ["[\(state)]"] : []
        for feed in feeds {
            if let presence = present[feed] {
                lines += Self.presenceLines(presence, title: styled ? "\u{1B}[1m\(feed)\u{1B}[0m" : feed, marked: joined[feed] ?? [], styled: styled)
                continue
            }
            guard let update = updates[feed] else {
                if status { lines.append("\(feed): (waiting)\(unavailable[feed] != nil ? " (unavailable)" : "")") }
                continue
            }
            let marks = highlighted[feed] ?? []
            let outage = status ? unavailable[feed].map { " (unavailable: showing the last state\($0.isEmpty ? "" : "; \($0)"))" } ?? "" : ""
            lines.append("\(styled ? "\u{1B}[1m\(feed)\u{1B}[0m" : feed) v\(update.version)\(update.isStale ? " (cached, stale)" : "")\(outage)")
            for (index, section) in update.snapshot.sections.enumerated() {
                let title = section.model["title"]?.stringValue ?? section.model["header"]?.stringValue
                lines.append(Self.mark("  ▸ \(section.id)\(title.map { " — \($0)" } ?? "")", marks.contains(section.id) && styled))
                for item in update.snapshot.items(atSectionIndex: index) {
                    lines.append(Self.mark("    \(item.kind) \(item.id)  \(Self.short(item.model.description))", marks.contains(item.id) && styled))
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func short(_ text: String, limit: Int = 80) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    static func mark(_ line: String, _ on: Bool) -> String { on ? "\u{1B}[7m\(line)\u{1B}[0m" : line }
}
