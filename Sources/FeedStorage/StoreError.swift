/// Why the store could not open, load or commit. Every case names the path involved.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The data directory cannot be created, opened or written.
    case directory(path: String, reason: String)
    /// Another process holds the directory's lock.
    case locked(path: String)
    /// The data cannot be trusted: a corrupt file or record, or a format this build does not know.
    case damaged(path: String, reason: String)
    /// No space left on the device (SQLITE_FULL / ENOSPC); writes work again once space is back.
    case full(path: String)
    /// Any other I/O or engine error during a write.
    case io(path: String, reason: String)
    /// A store on the network (Redis at `url`) cannot be reached, or did not answer in time.
    case unreachable(url: String, reason: String)
    /// A store on the network (Redis at `url`) is full: its memory reached `maxmemory`, and under
    /// `noeviction` it refuses writes rather than dropping keys. Writes work again once memory is freed.
    case outOfMemory(url: String, reason: String)

    public var description: String {
        switch self {
        case .directory(let path, let reason): "the data directory '\(path)' cannot be used: \(reason)"
        case .locked(let path): "the data directory '\(path)' is in use by another diffstream (it holds the lock on '\(path)/diffstream.lock')"
        case .damaged(let path, let reason): "the data in '\(path)' cannot be trusted: \(reason)"
        case .full(let path): "no space left on the device holding '\(path)'"
        case .io(let path, let reason): "a write to '\(path)' failed: \(reason)"
        case .unreachable(let url, let reason): "Redis at \(url) cannot be reached: \(reason)"
        case .outOfMemory(let url, let reason): "Redis at \(url) is full: \(reason)"
        }
    }
}
