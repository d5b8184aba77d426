import DiffStreamJSON
import FuzzSupport

/// The two JSON readers against each other: the tree parser (`JSONParser`) and the canonicalising
/// scanner (`JSONModel(parsing:)`) accept exactly the same texts; errors point inside the input; the
/// canonical form is a fixed point and is itself valid JSON.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONParser(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    var tree: JSONValue?
    var treeError: JSONParseError?
    do { tree = try JSONParser.parse(bytes, numbersBeyondDouble: .infinity) } catch { treeError = error }
    var model: JSONModel?
    var modelError: JSONParseError?
    do { model = try JSONModel(parsing: bytes) } catch { modelError = error }
    FuzzSupport.check((tree == nil) == (model == nil), "the readers disagree: tree \(treeError.map(String.init(describing:)) ?? "ok"), model \(modelError.map(String.init(describing:)) ?? "ok")")
    for error in [treeError, modelError].compactMap({ $0 }) {
        FuzzSupport.check((0...count).contains(error.offset), "error offset \(error.offset) outside 0...\(count)")
    }
    if let model {
        let again = try? JSONModel(parsing: Array(model.bytes))
        FuzzSupport.check(again == model, "canonical form is not a fixed point: \(model)")
        FuzzSupport.check(model.bytes.count <= count + 25 * max(1, count / 2), "canonical form out of proportion")
        FuzzSupport.check((try? JSONParser.parse(model.bytes, numbersBeyondDouble: .infinity)) != nil, "canonical form is not JSON")
    }
    return 0
}
