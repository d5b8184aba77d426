import Logging

/// A handler's log metadata as an idle subscriber keeps it. A `Logger.Metadata` of one entry is a
/// dictionary of about 200 bytes (its values hold an existential); the usual one entry (`feed`)
/// is kept inline here instead, as text, so it costs no allocation when its key and value are
/// short strings. More entries go to an array.
struct StreamLogMetadata {
    private var first: (key: String, value: String)?
    private var rest: [(key: String, value: String)] = []

    init() {}

    init(_ metadata: Logger.Metadata) {
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            if first == nil { first = (key, value.description) } else { rest.append((key, value.description)) }
        }
    }

    var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [:]
        if let first { metadata[first.key] = .string(first.value) }
        for (key, value) in rest { metadata[key] = .string(value) }
        return metadata
    }
}
