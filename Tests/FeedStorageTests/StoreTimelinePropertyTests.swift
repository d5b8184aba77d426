import Foundation
import Testing
import TestSupport
@testable import FeedStorage

/// One timeline per history (issue 51), as a seeded property over the real stores on temporary
/// directories: random writes of feeds and family members, plain restarts, backups (`diffstream
/// backup`, or a copy by hand of a stopped directory) and restores (`diffstream restore`, or the hand
/// copy put back and marked with `restore --in-place`). A small oracle remembers the state every
/// (feed, history, version) named; no pair may ever name two states, every plain restart keeps every
/// history, and every restore gives each feed and member a history it never had.
struct StoreTimelinePropertyTests {
    /// What the writers know of one feed or member: where it stands.
    struct Position: Equatable {
        var history: String
        var version: Int
        var snapshot: [UInt8]
    }

    /// The model: the feeds and members of the live directory, by name ("m:" marks a member).
    typealias Model = [String: Position]

    enum BackupKind { case command, byHand }

    struct Run {
        var rng: SeededGenerator
        let root = NSTemporaryDirectory() + "diffstream-timeline-" + UUID().uuidString
        var directories = 0
        var live: DataDirectory
        var model: Model = [:]
        /// Every (name, history, version) ever written, and the snapshot it named.
        var named: [String: [UInt8]] = [:]
        /// Every history each name ever had.
        var histories: [String: Set<String>] = [:]
        var backups: [(path: String, kind: BackupKind, model: Model)] = []
        var counts: [String: Int] = [:]

        init(seed: UInt64) {
            rng = SeededGenerator(seed: seed)
            live = DataDirectory(path: root + "/dir-0")
        }

        mutating func nextDirectory() -> String {
            directories += 1
            return root + "/dir-\(directories)"
        }

        /// Records what a write named: a second, different state for the same pair fails the property.
        mutating func name(_ name: String, _ position: Position) {
            let key = "\(name) \(position.history) \(position.version)"
            if let earlier = named[key] {
                #expect(earlier == position.snapshot, "\(key) names two states")
            }
            named[key] = position.snapshot
            histories[name, default: []].insert(position.history)
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func noHistoryAndVersionEverNamesTwoStates(seed: UInt64) async throws {
        var run = Run(seed: seed)
        defer { try? FileManager.default.removeItem(atPath: run.root) }
        var (log, _, members) = try run.live.open()
        for _ in 0..<120 {
            let roll = Int.random(in: 0..<100, using: &run.rng)
            switch roll {
            case 0..<70:
                try await write(&run, log: log, members: members)
            case 70..<80:
                run.counts["restart", default: 0] += 1
                log.close()
                members.close()
                let reopened = try run.live.open()
                (log, members) = (reopened.log, reopened.members)
                #expect(try Self.held(reopened.contents, reopened.members) == run.model, "a plain restart keeps every history and state")
            case 80..<90:
                let destination = run.nextDirectory()
                if Bool.random(using: &run.rng) {
                    run.counts["backup", default: 0] += 1
                    _ = try LogFeedStore.backup(from: run.live.path, to: destination)
                    run.backups.append((destination, .command, run.model))
                } else {
                    run.counts["copy by hand", default: 0] += 1
                    log.close()
                    members.close()
                    try FileManager.default.copyItem(atPath: run.live.path, toPath: destination)
                    run.backups.append((destination, .byHand, run.model))
                    let reopened = try run.live.open()
                    (log, members) = (reopened.log, reopened.members)
                }
            default:
                guard let backup = run.backups.randomElement(using: &run.rng) else { continue }
                run.counts["restore", default: 0] += 1
                log.close()
                members.close()
                let restored = DataDirectory(path: run.nextDirectory())
                switch backup.kind {
                case .command:
                    _ = try LogFeedStore.backup(from: backup.path, to: restored.path)  // diffstream restore BACKUP
                case .byHand:
                    try FileManager.default.copyItem(atPath: backup.path, toPath: restored.path)
                    try LogFeedStore.markRestored(restored.path)  // diffstream restore --in-place DIR
                }
                run.live = restored
                let reopened = try run.live.open()
                (log, members) = (reopened.log, reopened.members)
                let held = try Self.held(reopened.contents, reopened.members)
                #expect(Set(held.keys) == Set(backup.model.keys))
                for (name, position) in held {
                    let before = try #require(backup.model[name])
                    #expect(position.version == before.version && position.snapshot == before.snapshot, "\(name) is back as it was backed up")
                    #expect(!(run.histories[name] ?? []).contains(position.history), "\(name) takes a history it never had")
                    run.histories[name, default: []].insert(position.history)
                }
                run.model = held
            }
        }
        log.close()
        members.close()
        #expect(run.counts["restore", default: 0] > 0 && run.counts["restart", default: 0] > 0, "seed \(seed): \(run.counts)")
    }

    /// One write, as a feed makes it: the next version of the name's history, or version 1 of a new
    /// history for a new name or after a delete.
    func write(_ run: inout Run, log: LogFeedStore, members: MemberStore) async throws {
        let member = Bool.random(using: &run.rng)
        let name = (member ? "m:home." : "") + ["a", "b", "c"].randomElement(using: &run.rng)!
        let stored = String(name.dropFirst(member ? 2 : 0))
        if !member, run.model[name] != nil, Int.random(in: 0..<10, using: &run.rng) == 0 {
            try await log.commit(.delete(name: stored))
            run.model[name] = nil
            return
        }
        let position = Position(history: run.model[name]?.history ?? RandomID.history(), version: (run.model[name]?.version ?? 0) + 1,
                                snapshot: (0..<8).map { _ in UInt8.random(in: 0...255, using: &run.rng) })
        let write = DataDirectory.put(stored, history: position.history, version: position.version, snapshot: position.snapshot)
        if member { try await DataDirectory.commit(members, write) } else { try await log.commit(write) }
        run.model[name] = position
        run.name(name, position)
    }

    /// What the stores hold, as the model.
    static func held(_ contents: StoreContents, _ members: MemberStore) throws -> Model {
        var model: Model = [:]
        for feed in contents.feeds { model[feed.name] = Position(history: feed.history, version: feed.version, snapshot: feed.snapshot) }
        for (name, member) in try DataDirectory.read(members) {
            model["m:" + name] = Position(history: member.history, version: member.version, snapshot: member.snapshot)
        }
        return model
    }
}
