import DiffStream

/// Why a wire document (a snapshot or a batch) was refused, naming the place and, for ids, the id.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not JSON.
    case malformed(JSONParseError)
    /// The JSON does not have the expected shape at `path`.
    case shape(path: String, expected: String)
    /// An id is empty or longer than 256 UTF-8 bytes.
    case invalidID(path: String, id: String)
    /// The snapshot is not valid (a duplicate id, or an operation that names an unknown one).
    case snapshot(SnapshotError)

    public var errorDescription: String? {
        switch self {
        case .malformed(let error): error.description
        case .shape(let path, let expected): "\(path): expected \(expected)"
        case .invalidID(let path, let id):
            "\(path): invalid id '\(id.prefix(64))\(id.count > 64 ? "…" : "")': ids are 1 to \(WireID.maximumLength) UTF-8 bytes"
        case .snapshot(let error): error.description
        }
    }

    public var description: String { errorDescription ?? "invalid document" }
}
