import Synchronization
import TestSupport
@testable import FeedStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A disk in memory under the store's file seam, with the power-cut model of POSIX file systems that
/// the ALICE and CrashMonkey studies use:
/// - a file's data and size are durable only after a sync of that file (``sync(_:path:)``);
/// - a name (create, rename, unlink) is durable only after a sync of its directory;
/// - anything not yet durable may be kept, lost, or torn at a 512-byte boundary.
///
/// Two kinds of crash: ``kill()`` ends the process and keeps the page cache (what the next process
/// reads is everything written, durable or not); ``powerCut(_:)`` keeps what is durable plus the
/// chosen part of what is pending. A process dies at call ``State/crashAt``: that call and every later
/// one fail with EIO and change nothing.
///
/// It models the one data directory the store is given; other directories (the parent) only answer.
final class SimulatedDisk: StoreFiles {
    enum FileChange: Equatable {
        case write(offset: Int, bytes: [UInt8])
        case truncate(Int)
    }

    enum NameChange: Equatable {
        case link(String, inode: Int)
        case rename(String, to: String)
        case unlink(String)
    }

    struct Inode {
        var durable: [UInt8] = []
        var pending: [FileChange] = []
        var current: [UInt8] = []
    }

    struct State {
        var inodes: [Int: Inode] = [:]
        var nextInode = 1
        /// The names in the data directory as they are on the medium, and as the running process sees them.
        var durableNames: [String: Int] = [:]
        var names: [String: Int] = [:]
        var pendingNames: [NameChange] = []
        var directoryExists = false
        // The running process.
        var descriptors: [Int32: Int] = [:]
        var nextDescriptor: Int32 = 3
        var locks: [String: Int32] = [:]
        var calls = 0
        var crashAt: Int?
        var dead = false
        /// Each call the process made, in order ("open+create feeds-0000000002.log", "rename …").
        var trace: [String] = []
    }

    /// One part of what a power cut may keep: a pending change and how many ways it can go.
    struct Pending {
        var ways: Int
    }

    let directory: String
    private let state: Mutex<State>

    init(directory: String, state: State = State()) {
        self.directory = directory
        self.state = Mutex(state)
    }

    /// A copy of everything, to try several crashes from one moment.
    func copy() -> SimulatedDisk {
        SimulatedDisk(directory: directory, state: state.withLock { $0 })
    }

    var trace: [String] { state.withLock { $0.trace } }
    var calls: Int { state.withLock { $0.calls } }

    /// The next process dies at its `call`-th file call (0-based), or never.
    func crash(atCall call: Int?) {
        state.withLock { $0.crashAt = call }
    }

    /// `kill -9`: the process ends; the page cache, with everything it wrote, stays.
    func kill() {
        state.withLock { state in
            state.descriptors = [:]
            state.locks = [:]
            state.calls = 0
            state.crashAt = nil
            state.dead = false
            state.trace = []
        }
    }

    // MARK: Power cuts

    private static let sector = 512

    /// What is pending, one entry per change: how many ways it may go in a power cut. A write that
    /// spans sectors may also be torn (its first or its last sector alone kept).
    func pendingChanges() -> [Pending] {
        state.withLock { state in
            var pending: [Pending] = []
            for id in state.inodes.keys.sorted() {
                for change in state.inodes[id]!.pending {
                    if case .write(let offset, let bytes) = change, Self.tears(offset: offset, count: bytes.count) != nil {
                        pending.append(Pending(ways: 4))
                    } else {
                        pending.append(Pending(ways: 2))
                    }
                }
            }
            pending += state.pendingNames.map { _ in Pending(ways: 2) }
            return pending
        }
    }

    /// The ends of the first sector and the start of the last one, when a write spans several.
    private static func tears(offset: Int, count: Int) -> (head: Int, tail: Int)? {
        let end = offset + count
        let head = (offset / sector + 1) * sector
        guard head < end else { return nil }
        return (head, ((end - 1) / sector) * sector)
    }

    /// Power is cut: each pending change goes the way `choice` says (0 lost, 1 kept, 2 only its first
    /// sector, 3 only its last), in the order of ``pendingChanges()``; the process dies.
    func powerCut(_ choice: [Int]) {
        state.withLock { state in
            var index = 0
            for id in state.inodes.keys.sorted() {
                var inode = state.inodes[id]!
                var bytes = inode.durable
                for change in inode.pending {
                    let way = choice[index]
                    index += 1
                    switch change {
                    case .truncate(let size):
                        if way == 1 { Self.resize(&bytes, to: size) }
                    case .write(let offset, let data):
                        let end = offset + data.count
                        var range = offset..<end
                        if way == 0 { continue }
                        if way >= 2, let tears = Self.tears(offset: offset, count: data.count) {
                            range = way == 2 ? offset..<tears.head : tears.tail..<end
                        }
                        if bytes.count < range.upperBound { Self.resize(&bytes, to: range.upperBound) }
                        bytes.replaceSubrange(range, with: data[(range.lowerBound - offset)..<(range.upperBound - offset)])
                    }
                }
                inode.durable = bytes
                inode.current = bytes
                inode.pending = []
                state.inodes[id] = inode
            }
            var names = state.durableNames
            for change in state.pendingNames {
                let way = choice[index]
                index += 1
                guard way == 1 else { continue }
                switch change {
                case .link(let name, let inode): names[name] = inode
                case .rename(let from, let to):
                    if let inode = names.removeValue(forKey: from) { names[to] = inode }
                case .unlink(let name): names[name] = nil
                }
            }
            state.durableNames = names
            state.names = names
            state.pendingNames = []
        }
        kill()
    }

    private static func resize(_ bytes: inout [UInt8], to size: Int) {
        if size < bytes.count { bytes.removeLast(bytes.count - size) } else { bytes += repeatElement(0, count: size - bytes.count) }
    }

    // MARK: The seam

    private func name(_ path: String) -> String? {
        path.hasPrefix(directory + "/") ? String(path.dropFirst(directory.count + 1)) : nil
    }

    /// Counts the call; throws when the process is (or now becomes) dead.
    private func enter(_ state: inout State, _ call: String, _ path: String) throws(FileError) {
        if let crashAt = state.crashAt, state.calls >= crashAt { state.dead = true }
        state.calls += 1
        if state.dead { throw FileError(call: call + " (the process was killed)", path: path, code: EIO) }
        state.trace.append(call + " " + (name(path) ?? path))
    }

    private static func apply(_ change: FileChange, to inode: inout Inode) {
        switch change {
        case .truncate(let size): resize(&inode.current, to: size)
        case .write(let offset, let bytes):
            if inode.current.count < offset + bytes.count { resize(&inode.current, to: offset + bytes.count) }
            inode.current.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        }
        inode.pending.append(change)
    }

    @discardableResult func createDirectory(_ path: String) throws(FileError) -> [String] {
        try state.withLock { (state: inout State) throws(FileError) -> [String] in
            try enter(&state, "mkdir", path)
            guard path == directory else { return [] }
            defer { state.directoryExists = true }
            return state.directoryExists ? [] : [path]
        }
    }

    func open(_ path: String, _ flags: Int32) throws(FileError) -> Int32 {
        try state.withLock { (state: inout State) throws(FileError) -> Int32 in
            let create = flags & O_CREAT != 0
            try enter(&state, create ? "open+create" : "open", path)
            let inode: Int
            if flags & O_DIRECTORY != 0 {
                inode = 0
            } else {
                guard let name = name(path) else { throw FileError(call: "open", path: path, code: ENOENT) }
                if let existing = state.names[name] {
                    inode = existing
                    if flags & O_TRUNC != 0 { Self.apply(.truncate(0), to: &state.inodes[inode]!) }
                } else if create {
                    inode = state.nextInode
                    state.nextInode += 1
                    state.inodes[inode] = Inode()
                    state.names[name] = inode
                    state.pendingNames.append(.link(name, inode: inode))
                } else {
                    throw FileError(call: "open", path: path, code: ENOENT)
                }
            }
            let descriptor = state.nextDescriptor
            state.nextDescriptor += 1
            state.descriptors[descriptor] = inode
            return descriptor
        }
    }

    func close(_ descriptor: Int32) {
        state.withLock { state in
            guard !state.dead else { return }
            state.descriptors[descriptor] = nil
            state.locks = state.locks.filter { $0.value != descriptor }
        }
    }

    private func inode(_ state: State, _ descriptor: Int32, _ path: String) throws(FileError) -> Int {
        guard let inode = state.descriptors[descriptor], inode != 0 else { throw FileError(call: "descriptor", path: path, code: EBADF) }
        return inode
    }

    func write(_ descriptor: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in
            try enter(&state, "pwrite", path)
            let id = try inode(state, descriptor, path)
            Self.apply(.write(offset: offset, bytes: bytes), to: &state.inodes[id]!)
        }
    }

    func sync(_ descriptor: Int32, path: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in
            try enter(&state, "fdatasync", path)
            let id = try inode(state, descriptor, path)
            state.inodes[id]!.durable = state.inodes[id]!.current
            state.inodes[id]!.pending = []
        }
    }

    func syncDirectory(_ path: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in
            try enter(&state, "fsync-directory", path)
            guard path == directory else { return }
            state.durableNames = state.names
            state.pendingNames = []
        }
    }

    func truncate(_ descriptor: Int32, to size: Int, path: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in
            try enter(&state, "ftruncate", path)
            let id = try inode(state, descriptor, path)
            Self.apply(.truncate(size), to: &state.inodes[id]!)
        }
    }

    func rename(_ from: String, to: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in
            try enter(&state, "rename", from)
            guard let old = name(from), let new = name(to), let inode = state.names.removeValue(forKey: old) else {
                throw FileError(call: "rename to \(to)", path: from, code: ENOENT)
            }
            state.names[new] = inode
            state.pendingNames.append(.rename(old, to: new))
        }
    }

    func remove(_ path: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in
            try enter(&state, "unlink", path)
            guard let name = name(path), state.names.removeValue(forKey: name) != nil else { return }
            state.pendingNames.append(.unlink(name))
        }
    }

    func size(_ path: String) -> Int? {
        state.withLock { state in
            guard (try? enter(&state, "stat", path)) != nil, let name = name(path), let inode = state.names[name] else { return nil }
            return state.inodes[inode]!.current.count
        }
    }

    func read(_ path: String) throws(FileError) -> [UInt8] {
        try state.withLock { (state: inout State) throws(FileError) -> [UInt8] in
            try enter(&state, "read", path)
            guard let name = name(path), let inode = state.names[name] else { throw FileError(call: "open", path: path, code: ENOENT) }
            return state.inodes[inode]!.current
        }
    }

    func list(_ path: String) throws(FileError) -> [String] {
        try state.withLock { (state: inout State) throws(FileError) -> [String] in
            try enter(&state, "list", path)
            guard path == directory, state.directoryExists else { throw FileError(call: "opendir", path: path, code: ENOENT) }
            return state.names.keys.sorted()
        }
    }

    func lock(_ path: String) throws(FileError) -> Int32 {
        let descriptor = try open(path, O_RDWR | O_CREAT)
        return try state.withLock { (state: inout State) throws(FileError) -> Int32 in
            guard state.locks[path] == nil else {
                state.descriptors[descriptor] = nil
                throw FileError(call: "flock", path: path, code: EWOULDBLOCK)
            }
            state.locks[path] = descriptor
            return descriptor
        }
    }

    func checkWritable(_ path: String) throws(FileError) {
        try state.withLock { (state: inout State) throws(FileError) in try enter(&state, "access", path) }
    }
}
