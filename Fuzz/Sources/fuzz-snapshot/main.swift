import DiffStream
import DiffStreamJSON
import FuzzSupport

/// Snapshot documents: decoding never crashes; a decoded snapshot survives encode → decode unchanged,
/// and a refused one names a byte inside the input when it is malformed.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSnapshot(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    do {
        let snapshot = try WireCodec.decodeSnapshot(bytes)
        let encoded = WireCodec.encode(snapshot)
        let again = try? WireCodec.decodeSnapshot(encoded)
        FuzzSupport.check(again == snapshot, "snapshot does not survive its wire form")
        FuzzSupport.check(WireSnapshot.diff(from: snapshot, to: snapshot).isEmpty, "a snapshot differs from itself")
        let batch = WireSnapshot.diff(from: WireSnapshot(), to: snapshot)
        FuzzSupport.check((try? WireSnapshot().applying(batch)) == snapshot, "the batch from empty does not rebuild it")
    } catch .malformed(let error) {
        FuzzSupport.check((0...count).contains(error.offset), "error offset \(error.offset) outside 0...\(count)")
    } catch {
        FuzzSupport.check(!error.description.isEmpty, "an error without a message")
    }
    return 0
}
