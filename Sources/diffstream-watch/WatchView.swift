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

    /// The view as lines; `styled`: with the terminal's bold and inverse video (control codes).
    /// `status`: with the state (`[live]`) first, the feeds not shown yet (`(waiting)`) and the outage
    /// marks, as the live view on a terminal shows them; without, the feeds' data only (for a pipe or a
    /// file, while the state goes to standard error). A cached snapshot is marked `(cached, stale)`
    /// either way: that says which data it is.
    func render(styled: Bool = true, status: Bool = true) -> String {
        var lines: [String] = status ? ["[\(state)]"] : []
        for feed in feeds {
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
