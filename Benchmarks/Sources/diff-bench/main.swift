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

/// A median over timed repetitions, and how many there were.
struct Timing { var median: Double; var runs: Int }

/// Median milliseconds of `body` over repetitions filling about `budget` seconds (at least `minimum`),
/// after one warm-up call. The result of each call is released after the clock stops, so neither side
/// of the comparison is charged for freeing its output.
func measure<T>(minimum: Int = 5, budget: Double = 1.0, maximum: Int = 200, _ body: () -> T) -> Timing {
    withExtendedLifetime(body()) {}  // warm-up
    var times: [Double] = []
    let start = monotonicSeconds()
    while times.count < minimum || (monotonicSeconds() - start < budget && times.count < maximum) {
        let t0 = monotonicSeconds()
        let result = body()
        let t1 = monotonicSeconds()
        withExtendedLifetime(result) {}
        times.append((t1 - t0) * 1000)
    }
    times.sort()
    let middle = times.count / 2
    let median = times.count % 2 == 1 ? times[middle] : (times[middle - 1] + times[middle]) / 2
    return Timing(median: median, runs: times.count)
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

/// The baseline: the standard library's Myers difference with inferred moves, on the id arrays.
func baselineDifference(_ old: [Int], _ new: [Int]) -> CollectionDifference<Int> {
    new.difference(from: old).inferringMoves()
}

/// Moves in a baseline difference: the inserts associated with a removal.
func baselineMoves(_ difference: CollectionDifference<Int>) -> Int {
    difference.reduce(0) { count, change in
        if case .insert(_, _, let associated) = change, associated != nil { return count + 1 }
        return count
    }
}

struct Row {
    var size: Int, shape: String
    var ours: Timing, baseline: Timing?
    var counts: OperationCounts, baselineMoves: Int?
    var verified: Bool?  // nil: not checked (100,000 items)
}

let verifyLimit = 10_000
var rows: [Row] = []
for size in [1_000, 10_000, 100_000] {
    for shape in ["typed, 1 section", "generic, 3 sections"] {
        var rng = SplitMix64(state: UInt64(size) &* 31 &+ UInt64(shape.count))
        let sectionCount = shape.hasPrefix("typed") ? 1 : 3
        var oldIDs = Array(repeating: [Int](), count: sectionCount)
        for id in 0..<size { oldIDs[id % sectionCount].append(id) }
        let (newIDs, updated) = mutate(oldIDs, count: size, rng: &rng)
        let ours: Timing
        let counts: OperationCounts
        var verified: Bool?
        if sectionCount == 1 {
            let old = try! Snapshot<TypedSection, TypedItem>(sections: [Section(TypedSection(id: 0), items: oldIDs[0].map { TypedItem(id: $0, payload: 0) })])
            let new = try! Snapshot<TypedSection, TypedItem>(sections: [Section(TypedSection(id: 0), items: newIDs[0].map { TypedItem(id: $0, payload: updated.contains($0) ? 1 : 0) })])
            ours = measure { Snapshot.diff(from: old, to: new) }
            let batch = Snapshot.diff(from: old, to: new)
            counts = batch.counts
            if size <= verifyLimit { verified = (try? old.applying(batch)) == new }
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
            ours = measure { WireSnapshot.diff(from: old, to: new) }
            let batch = WireSnapshot.diff(from: old, to: new)
            counts = batch.counts
            if size <= verifyLimit { verified = (try? old.applying(batch)) == new }
        }
        let flatOld = oldIDs.flatMap { $0 }
        let flatNew = newIDs.flatMap { $0 }
        var baseline: Timing?
        var moves: Int?
        if !(quick && size == 100_000) {
            // At 100,000 items one call takes seconds: the warm-up and one timed run.
            baseline = measure(minimum: size >= 100_000 ? 1 : 3, budget: size >= 100_000 ? 0 : 1) { baselineDifference(flatOld, flatNew) }
            moves = baselineMoves(baselineDifference(flatOld, flatNew))
        }
        rows.append(Row(size: size, shape: shape, ours: ours, baseline: baseline, counts: counts, baselineMoves: moves, verified: verified))
        FileHandle.standardError.write(Data("done: \(size) \(shape)\n".utf8))
    }
}

func format(_ value: Double) -> String { String(format: value < 10 ? "%.2f" : "%.1f", value) }
func grouped(_ value: Int) -> String {
    let digits = Array(String(value))
    var out = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(digit)
    }
    return out
}

print("| items | shape | ours median ms (runs) | baseline median ms (runs) | speed-up | ours: insert / delete / move / update | baseline moves | moves ours <= baseline | old.applying(batch) == new |")
print("|---:|---|---:|---:|---:|---|---:|---|---|")
for row in rows {
    let baseline = row.baseline.map { "\(format($0.median)) (\($0.runs))" } ?? "skipped (--quick)"
    let speedup = row.baseline.map { String(format: "%.0fx", $0.median / row.ours.median) } ?? "–"
    let c = row.counts
    let fewer = row.baselineMoves.map { c[.move] <= $0 ? "yes" : "no" } ?? "–"
    let check = row.verified.map { $0 ? "yes" : "NO" } ?? "not checked"
    print("| \(grouped(row.size)) | \(row.shape) | \(format(row.ours.median)) (\(row.ours.runs)) | \(baseline) | \(speedup) | \(c[.insert]) / \(c[.delete]) / \(c[.move]) / \(c[.update]) | \(row.baselineMoves.map(String.init) ?? "–") | \(fewer) | \(check) |")
}

let compared = rows.filter { $0.baselineMoves != nil }
let movesOK = compared.allSatisfy { $0.counts[.move] <= $0.baselineMoves! }
let convergeOK = rows.allSatisfy { $0.verified != false }
print("")
print("moves ours <= baseline: \(movesOK ? "yes" : "no") (\(compared.count) of \(rows.count) cases compared)")
print("verification: old.applying(batch) == new checked once per case at <= \(grouped(verifyLimit)) items, outside the timing: \(convergeOK ? "all yes" : "FAILED"); skipped at 100,000 (apply is O(n) per operation)")
let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.map { String($0.dropFirst(6)).trimmingCharacters(in: .whitespaces) } ?? "unknown"
print("peak memory (VmHWM): \(peak)")
let date = ISO8601DateFormatter().string(from: Date())
print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores (nproc, ProcessInfo); date: \(date)\(quick ? "; --quick" : "")")
if !convergeOK { exit(1) }
