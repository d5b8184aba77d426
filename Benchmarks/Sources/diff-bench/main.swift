// diff-bench: times Snapshot.diff for 1,000 / 10,000 / 100,000 items, typed (one section, Int ids)
// and generic (String ids, JSON models, three sections), with 10% deleted, 10% inserted, 5% moved and
// 5% updated; and, in the same run, the standard library's difference(from:).inferringMoves() on the
// same ids as the baseline.
//   swift run -c release --package-path Benchmarks diff-bench [--quick]
import DiffStream
import DiffStreamJSON
import Foundation

struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct TypedSection: Identifiable, Equatable { var id: Int }
struct TypedItem: Identifiable, Equatable { var id: Int; var payload: Int }

let quick = CommandLine.arguments.contains("--quick")

func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Median milliseconds of `body` over repetitions filling about `budget` seconds (at least `minimum`).
func measure(minimum: Int = 5, budget: Double = 1.0, maximum: Int = 200, _ body: () -> Void) -> Double {
    body()  // warm-up
    var times: [Double] = []
    let start = monotonicSeconds()
    while times.count < minimum || (monotonicSeconds() - start < budget && times.count < maximum) {
        let t0 = monotonicSeconds()
        body()
        times.append((monotonicSeconds() - t0) * 1000)
    }
    times.sort()
    return times[times.count / 2]
}

/// The new order of item ids (as sections of ids) after the standard mix of changes.
func mutate(_ sections: [[Int]], count: Int, rng: inout SplitMix64) -> (sections: [[Int]], updated: Set<Int>) {
    var sections = sections
    let all = sections.flatMap { $0 }
    let deleted = Set(all.shuffled(using: &rng).prefix(count / 10))
    sections = sections.map { $0.filter { !deleted.contains($0) } }
    var nextID = (all.max() ?? 0) + 1
    for _ in 0..<(count / 10) {
        let s = Int.random(in: 0..<sections.count, using: &rng)
        sections[s].insert(nextID, at: Int.random(in: 0...sections[s].count, using: &rng))
        nextID += 1
    }
    let survivors = all.filter { !deleted.contains($0) }
    for id in survivors.shuffled(using: &rng).prefix(count / 20) {
        for s in sections.indices { sections[s].removeAll { $0 == id } }
        let target = Int.random(in: 0..<sections.count, using: &rng)
        sections[target].insert(id, at: Int.random(in: 0...sections[target].count, using: &rng))
    }
    let updated = Set(survivors.shuffled(using: &rng).prefix(count / 20))
    return (sections, updated)
}

func baselineMoves(_ old: [Int], _ new: [Int]) -> Int {
    new.difference(from: old).inferringMoves().reduce(0) { count, change in
        if case .insert(_, _, let associated) = change, associated != nil { return count + 1 }
        return count
    }
}

struct Row {
    var size: Int, shape: String, ours: Double, baseline: Double?, counts: OperationCounts, baselineMoves: Int?, verified: Bool
}

var rows: [Row] = []
for size in [1_000, 10_000, 100_000] {
    for shape in ["typed, 1 section", "generic, 3 sections"] {
        var rng = SplitMix64(state: UInt64(size) &* 31 &+ UInt64(shape.count))
        let sectionCount = shape.hasPrefix("typed") ? 1 : 3
        var oldIDs = Array(repeating: [Int](), count: sectionCount)
        for id in 0..<size { oldIDs[id % sectionCount].append(id) }
        let (newIDs, updated) = mutate(oldIDs, count: size, rng: &rng)
        let ours: Double
        let counts: OperationCounts
        var verified = false
        if sectionCount == 1 {
            let old = try! Snapshot<TypedSection, TypedItem>(sections: [Section(TypedSection(id: 0), items: oldIDs[0].map { TypedItem(id: $0, payload: 0) })])
            let new = try! Snapshot<TypedSection, TypedItem>(sections: [Section(TypedSection(id: 0), items: newIDs[0].map { TypedItem(id: $0, payload: updated.contains($0) ? 1 : 0) })])
            var batch = Batch<TypedSection, TypedItem>()
            ours = measure { batch = Snapshot.diff(from: old, to: new) }
            counts = batch.counts
            if size <= 10_000 { verified = (try? old.applying(batch)) == new; precondition(verified, "typed batch does not converge") }
        } else {
            func model(_ id: Int, _ version: Int) -> JSONValue { ["title": .string("item \(id)"), "n": .number(Double(id + version))] }
            func wire(_ ids: [[Int]], changed: Set<Int>) -> WireSnapshot {
                try! WireSnapshot(sections: ids.enumerated().map { index, items in
                    Section(WireSection(id: "section-\(index)", model: ["title": .string("Section \(index)")]),
                            items: items.map { WireItem(id: "item-\($0)", kind: "card", model: model($0, changed.contains($0) ? 1 : 0)) })
                })
            }
            let old = wire(oldIDs, changed: [])
            let new = wire(newIDs, changed: updated)
            var batch = WireBatch()
            ours = measure { batch = WireSnapshot.diff(from: old, to: new) }
            counts = batch.counts
            if size <= 10_000 { verified = (try? old.applying(batch)) == new; precondition(verified, "generic batch does not converge") }
        }
        let flatOld = oldIDs.flatMap { $0 }
        let flatNew = newIDs.flatMap { $0 }
        var baseline: Double?
        var moves: Int?
        if !(quick && size == 100_000) {
            var m = 0
            baseline = measure(minimum: size >= 100_000 ? 1 : 3, budget: size >= 100_000 ? 0 : 1) { m = baselineMoves(flatOld, flatNew) }
            moves = m
        }
        let row = Row(size: size, shape: shape, ours: ours, baseline: baseline, counts: counts, baselineMoves: moves, verified: verified)
        rows.append(row)
        FileHandle.standardError.write(Data("done: \(size) \(shape)\n".utf8))
    }
}

func format(_ value: Double) -> String { String(format: value < 10 ? "%.2f" : "%.1f", value) }
print("| items | shape | ours (ms) | stdlib baseline (ms) | speed-up | ours: insert / delete / move / update | baseline moves | moves ≤ baseline | converges |")
print("|---:|---|---:|---:|---:|---|---:|---|---|")
for row in rows {
    let baseline = row.baseline.map(format) ?? "skipped"
    let speedup = row.baseline.map { String(format: "%.0fx", $0 / row.ours) } ?? "–"
    let c = row.counts
    let ok = row.baselineMoves.map { c[.move] <= $0 ? "yes" : "NO" } ?? "–"
    print("| \(row.size) | \(row.shape) | \(format(row.ours)) | \(baseline) | \(speedup) | \(c[.insert]) / \(c[.delete]) / \(c[.move]) / \(c[.update]) | \(row.baselineMoves.map(String.init) ?? "–") | \(ok) | \(row.size <= 10_000 ? (row.verified ? "yes" : "NO") : "not checked") |")
}
let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.map { String($0.dropFirst(6)).trimmingCharacters(in: .whitespaces) } ?? "?"
print("\nmedians; \(ProcessInfo.processInfo.activeProcessorCount) cores; peak memory \(peak); \(Date())")
