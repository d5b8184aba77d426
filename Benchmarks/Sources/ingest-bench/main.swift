// ingest-bench: times what a PUT of a big snapshot costs the server before the batch is encoded:
// reading and validating the body (`WireCodec.decodeSnapshot`) plus the diff against the current
// snapshot. The same source is compiled against this checkout and against a previous commit by
// Benchmarks/ingest.py, which alternates the two with Python's json.loads on the same bytes.
//   swift run -c release --package-path Benchmarks ingest-bench <old.json> <new.json> <repetitions>
// Prints one line per repetition: `decode_ms diff_ms total_ms operations`.
import DiffStream
import DiffStreamJSON
import Foundation

func monotonicMilliseconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1e6
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let repetitions = Int(arguments[3]),
      let oldData = FileManager.default.contents(atPath: arguments[1]),
      let newData = FileManager.default.contents(atPath: arguments[2])
else {
    FileHandle.standardError.write(Data("usage: ingest-bench <old.json> <new.json> <repetitions>\n".utf8))
    exit(2)
}
let oldBytes = [UInt8](oldData)
let newBytes = [UInt8](newData)
do {
    let old = try WireCodec.decodeSnapshot(oldBytes)
    _ = WireSnapshot.diff(from: old, to: try WireCodec.decodeSnapshot(newBytes))  // warm-up
    for _ in 0..<repetitions {
        let t0 = monotonicMilliseconds()
        let new = try WireCodec.decodeSnapshot(newBytes)
        let t1 = monotonicMilliseconds()
        let batch = WireSnapshot.diff(from: old, to: new)
        let t2 = monotonicMilliseconds()
        withExtendedLifetime((new, batch)) {}
        print(String(format: "%.3f %.3f %.3f %d", t1 - t0, t2 - t1, t2 - t0, batch.operations.count))
    }
} catch {
    FileHandle.standardError.write(Data("ingest-bench: \(error)\n".utf8))
    exit(1)
}
