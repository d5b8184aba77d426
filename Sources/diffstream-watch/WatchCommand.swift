import ArgumentParser
import DiffStream
import DiffStreamClient
import DiffStreamJSON
import Foundation
import TLSStreamClient

/// `diffstream watch URL FEED…`: follows feeds with the Swift client and shows them live, or prints
/// each snapshot as a line of JSON (`--json`).
///
/// A program of its own, `diffstream-watch`, which `diffstream watch` runs in its place (`execv`): the
/// client links FoundationNetworking, and with it libcurl and some 28 libraries more, which the server
/// process should not load (4 MB of its resident memory at start; docs/benchmarks.md, issue 35).
@main
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diffstream watch",
        abstract: "Follows feeds of a server: a live view, or one line of JSON per snapshot.",
        discussion: """
        Follows through disconnects (resuming from the last event id). For private feeds give --token T \
        (before or after 'watch') or set DIFFSTREAM_WATCH_TOKEN. Standard output holds the data only (the \
        view, or the JSON lines); the connection's state and every message go to standard error as \
        'diffstream watch: …', except in the live view on a terminal, whose first line shows the state. \
        Exit codes: 0 done (--once printed every feed); 2 bad usage (a missing URL or feed, an unknown \
        option, not an http(s) URL, a name that is not a feed id, …); 3 unauthorized (401: no token, or an invalid or expired \
        one); 4 forbidden (403); 5 not found (404, before any snapshot of the feed); 6 unreachable (no \
        connection could be made before any live snapshot, a cached one does not count, or the server's certificate was not accepted). Once a feed was shown, a 404 or a lost server is \
        retried instead. https URLs (and any URL \
        given --cacert or --insecure) stream through the client's OpenSSL transport (TLSStreamClient) on every \
        platform: the CA file, or OpenSSL's default CA paths, and the host name or IP address verified.
        """)

    @Argument(help: "The server's URL, e.g. http://127.0.0.1:8080.") var url: String
    @Argument(help: "The feeds to follow (several share one stream).") var feeds: [String]
    @Flag(help: "Print each snapshot as one line of JSON: the object GET /feeds/{feed} returns at that position (with \"history\" and the event id under \"id\").") var json = false
    @Flag(help: "Print the current snapshot of each feed and exit.") var once = false
    @Flag(help: "Follow each feed through its cacheable log (GET /feeds/{feed}/log: one read at a time, a live one waiting at the head) instead of the event stream: for a server behind an HTTP cache or a CDN.") var poll = false
    /// The bearer token sent. `diffstream --token T watch …` (the server command's option, before
    /// `watch`) reaches here as `DIFFSTREAM_WATCH_TOKEN`.
    @Option(help: "The bearer token to send (or set DIFFSTREAM_WATCH_TOKEN).") var token: String?
    @Option(help: "PEM file of the certificate authorities to trust (instead of OpenSSL's default CA paths). An unreadable file is exit 2.") var cacert: String?
    @Flag(help: "Do not verify the server's certificate (its chain or its name).") var insecure = false
    @Option(help: "A directory for the offline cache (the last snapshot is shown at once, marked stale; --once waits for the current one).") var cache: String?

    enum Exit: Int32 {
        case usage = 2, unauthorized = 3, forbidden = 4, notFound = 5, unreachable = 6
    }

    /// ArgumentParser's own `main` exits 64 (`EX_USAGE`) for a missing argument or an unknown option;
    /// `watch` documents one code for bad usage, 2, as `diffstream` itself uses. `--help` and `--version`
    /// still print to standard output and exit 0.
    static func main() async {
        let command: WatchCommand
        do {
            command = try parse()
        } catch {
            if exitCode(for: error) == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            FileHandle.standardError.write(Data("diffstream watch: \(fullMessage(for: error))\n".utf8))
            Foundation.exit(Exit.usage.rawValue)
        }
        do {
            try await command.run()
        } catch {
            exit(withError: error)
        }
    }

    func run() async throws {
        guard let base = URL(string: url), base.scheme == "http" || base.scheme == "https" else {
            fail(.usage, "not an http(s) URL: \(url)")
        }
        guard !feeds.isEmpty else { fail(.usage, "name at least one feed") }
        // The server answers a bad name on the one-feed route 404, as any path it does not know: caught
        // here, it is the usage error it is (exit 2), not a feed that may yet appear (exit 5).
        if let bad = feeds.first(where: { !Self.isFeedID($0) }) {
            fail(.usage, "'\(bad.prefix(80))' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)")
        }
        if cacert != nil && insecure { fail(.usage, "give --cacert or --insecure, not both") }
        let token = token ?? ProcessInfo.processInfo.environment["DIFFSTREAM_WATCH_TOKEN"]
        var client = FeedClient(baseURL: base, token: token, cacheDirectory: cache.map { URL(fileURLWithPath: $0, isDirectory: true) })
        client.insecure = insecure
        if poll { client.delivery = .cacheableLog }
        if base.scheme == "https" || cacert != nil || insecure {
            do {
                client.streamTransport = try TLSStreamTransport(caFile: cacert, insecure: insecure)
            } catch {
                fail(.usage, error.message)
            }
        }
        // Presence feeds (`_presence.F`, who is watching F) in the view: followed with the client's
        // types for them, a line per present user. With --json, every feed is its wire JSON.
        if !json && feeds.allSatisfy(Self.isPresenceFeed) {
            typealias Presence = Snapshot<PresenceSummary, PresenceMember>
            let events = feeds.count == 1 ? client.snapshots(of: feeds[0], as: Presence.self) : client.snapshots(of: feeds, as: Presence.self)
            try await follow(events, jsonLine: nil) { (view: inout WatchView, update: FeedUpdate<PresenceSummary, PresenceMember>) in view.apply(presence: update) }
        } else {
            let events = feeds.count == 1 ? client.updates(of: feeds[0]) : client.updates(of: feeds)
            let jsonLine: ((WireFeedUpdate) -> [UInt8])? = json ? { Self.jsonLine($0) } : nil
            try await follow(events, jsonLine: jsonLine) { (view: inout WatchView, update: WireFeedUpdate) in view.apply(update) }
        }
    }

    /// Shows `events` until they end (or `--once` has every feed): each update through `jsonLine` when
    /// given (`--json`), else applied to the view by `apply`; the connection's state and refusals as
    /// the exit codes say.
    private func follow<Section, Item>(_ events: AsyncThrowingStream<FeedEvent<Section, Item>, any Error>, jsonLine: ((FeedUpdate<Section, Item>) -> [UInt8])?,
                                       apply: (inout WatchView, FeedUpdate<Section, Item>) -> Void) async throws {
        var view = WatchView(feeds: feeds)
        var shown = Set<String>()
        var everConnected = false
        // The live view, redrawn in place, only without --json on a terminal: its first line is the
        // connection's state. Anywhere else standard output holds data only (a pipe or a file expects
        // nothing else), and the state goes to standard error, a line each time it changes.
        let liveView = !json && Self.toTerminal
        var noted: String?
        func report(_ state: String, redraw: Bool) {
            view.state = state
            if liveView {
                if redraw { writeScreen(view) }
            } else if state != noted {
                note(state)
                noted = state
            }
        }
        do {
            for try await event in events {
                switch event {
                case .update(let update):
                    // A cached (stale) snapshot is neither the current one `--once` prints nor a sign the
                    // server was reached.
                    if update.isStale && once { continue }
                    if !update.isStale { everConnected = true }
                    if let jsonLine {
                        writeLine(jsonLine(update))
                    } else {
                        apply(&view, update)
                        writeScreen(view)
                    }
                    if !update.isStale { shown.insert(update.feed) }
                    if once, shown.count == feeds.count { return }
                case .deleted(let feed):
                    note("\(feed): deleted; waiting for it to appear again")
                    view.state = "feed \(feed) deleted"
                    noted = view.state
                case .unauthorized(let problem):
                    fail(.unauthorized, "unauthorized (401): \(problem.detail.isEmpty ? problem.error : problem.detail)")
                case .forbidden(let problem):
                    fail(.forbidden, "forbidden (403): \(problem.detail.isEmpty ? problem.error : problem.detail)")
                case .notFound(let problem):
                    let feed = problem.feed ?? feeds.joined(separator: ", ")
                    if once || !shown.contains(feed) && (problem.feed != nil || shown.isEmpty) {
                        fail(.notFound, "not found (404): \(problem.detail.isEmpty ? "no feed named \(feed)" : problem.detail)")
                    }
                    report("\(feed) not found; retrying", redraw: false)
                case .serverError(let problem):
                    if problem.status == 400 { fail(.usage, "refused (400): \(problem.detail)") }
                    note("server error: \(problem)")
                case .resyncing(let feed, let reason):
                    report("\(feed): resyncing (\(reason))", redraw: false)
                case .unavailable(let feed, let detail):
                    note("\(feed): unavailable (\(detail.isEmpty ? "the server cannot reach its store" : detail)); showing the last state")
                    view.unavailable[feed] = detail
                    if liveView { writeScreen(view) }
                case .available(let feed):
                    note("\(feed): available again")
                    view.unavailable[feed] = nil
                    if liveView { writeScreen(view) }
                case .connection(let state):
                    switch state {
                    case .connected:
                        everConnected = true
                        report("live", redraw: true)
                    case .connecting:
                        report("connecting", redraw: true)
                    case .disconnected(let reason, let retryIn):
                        if !everConnected {
                            fail(.unreachable, "cannot reach \(url): \(reason)")
                        }
                        report(String(format: "disconnected (%@); retrying in %.1f s", reason, retryIn), redraw: true)
                    case .stalled(let silence):
                        report(String(format: "no heartbeat for %.1f s; reconnecting", silence), redraw: true)
                    }
                }
            }
        } catch let error as FeedClientError {
            fail(.usage, error.description)  // the URL and a feed's path make no valid URL
        }
    }

    /// `{"feed","history","version","sections","id"}`: the body of `GET /feeds/{feed}` at the same
    /// position; models as the server wrote them (canonical JSON, kept as bytes).
    static func jsonLine(_ update: WireFeedUpdate) -> [UInt8] {
        var writer = JSONWriter(capacity: 160 + update.snapshot.numberOfItems * 64)
        writer.raw("{\"feed\":")
        writer.write(update.feed)
        if let history = update.history {
            writer.raw(",\"history\":")
            writer.write(history)
        }
        writer.raw(",\"version\":")
        writer.write(update.version)
        writer.byte(UInt8(ascii: ","))
        WireCodec.writeSections(update.snapshot, into: &writer)
        writer.raw(",\"id\":")
        writer.write(update.eventID)
        writer.raw("}\n")
        return writer.bytes
    }

    private func writeLine(_ bytes: [UInt8]) {
        FileHandle.standardOutput.write(Data(bytes))  // unbuffered: one write per line
    }

    /// On a terminal, the view redrawn in place (the state first, bold names, changes in inverse
    /// video); into a pipe or a file, the feeds' lines only, plain, one view after another with a blank
    /// line between, and no control codes (the state went to standard error).
    private func writeScreen(_ view: WatchView) {
        if Self.toTerminal {
            FileHandle.standardOutput.write(Data(("\u{1B}[H\u{1B}[2J" + view.render(styled: true)).utf8))
        } else {
            FileHandle.standardOutput.write(Data((view.render(styled: false, status: false) + "\n").utf8))
        }
    }

    private static let toTerminal = isatty(STDOUT_FILENO) == 1

    /// Whether `name` is a presence feed's (`_presence.F`, or `_presence-` and a hash for a long `F`).
    static func isPresenceFeed(_ name: String) -> Bool {
        name.hasPrefix("_presence.") || name.hasPrefix("_presence-")
    }

    /// The server's rule for feed names (FeedCore's `FeedID.isValid`, which this program does not link):
    /// 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot.
    static func isFeedID(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }

    private func note(_ message: String) {
        FileHandle.standardError.write(Data("diffstream watch: \(message)\n".utf8))
    }

    private func fail(_ code: Exit, _ message: String) -> Never {
        note(message)
        Foundation.exit(code.rawValue)
    }
}
