import DiffStream
import DiffStreamJSON
import FuzzSupport

/// Operation lists (`[{"op":…},…]`): decoding never crashes, and a decoded batch survives its wire form.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOperations(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let value = try? JSONParser.parse(bytes) else { return 0 }
    guard let batch = try? WireCodec.decodeOperations(value) else { return 0 }
    var writer = JSONWriter()
    WireCodec.writeOperations(batch.operations, into: &writer)
    let again = (try? JSONParser.parse(writer.bytes)).flatMap { try? WireCodec.decodeOperations($0) }
    FuzzSupport.check(again == batch, "batch does not survive its wire form")
    // Applying an arbitrary batch to an empty snapshot either works or throws; it never traps.
    _ = try? WireSnapshot().applying(batch)
    return 0
}
