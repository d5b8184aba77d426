#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call on a store file: the call, the path and errno.
struct FileError: Error, CustomStringConvertible {
    var call: String
    var path: String
    var code: Int32

    /// ENOSPC or EDQUOT: the write may succeed once space is back.
    var isFull: Bool { code == ENOSPC || code == EDQUOT }
    var description: String { "\(call)(\(path)): \(String(cString: strerror(code))) (errno \(code))" }

    /// The error as the store reports it to a writer.
    func storeError(directory: String) -> StoreError {
        isFull ? .full(path: directory) : .io(path: path, reason: description)
    }
}

/// The seam under every file call the log store makes (``LogFeedStore``, its recovery and backup, and
/// the directory lock): ``SystemStoreFiles`` makes the system calls; the tests put a simulated disk
/// here that loses what was not synced in a power cut (docs/architecture.md, "Durability model").
///
/// The durability a caller may count on is POSIX's, no more: a file's data and size are durable after
/// ``sync(_:path:)`` of that file; a name created, renamed or removed is durable after
/// ``syncDirectory(_:)`` of its directory.
protocol StoreFiles: Sendable {
    /// Creates the directory and its parents if they are missing; the directories it created,
    /// outermost first (empty: `path` was there).
    @discardableResult func createDirectory(_ path: String) throws(FileError) -> [String]
    /// `open(2)` with `O_CLOEXEC` added and mode 0644; the flags the store uses are `O_RDONLY`, `O_RDWR`,
    /// `O_WRONLY`, `O_CREAT`, `O_TRUNC` and `O_DIRECTORY`.
    func open(_ path: String, _ flags: Int32) throws(FileError) -> Int32
    func close(_ descriptor: Int32)
    /// Writes all of `bytes` at `offset` (`pwrite` until done).
    func write(_ descriptor: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(FileError)
    /// `fdatasync`: the data written so far, and the size, are on the medium.
    func sync(_ descriptor: Int32, path: String) throws(FileError)
    /// `fsync` of a directory: names created, renamed or removed in it are on the medium.
    func syncDirectory(_ path: String) throws(FileError)
    func truncate(_ descriptor: Int32, to size: Int, path: String) throws(FileError)
    func rename(_ from: String, to: String) throws(FileError)
    /// Removes a file; a file already gone is not an error.
    func remove(_ path: String) throws(FileError)
    /// The size of a regular file, or nil when there is none (or it is a directory).
    func size(_ path: String) -> Int?
    /// The whole file.
    func read(_ path: String) throws(FileError) -> [UInt8]
    /// The names in a directory (not `.` and `..`).
    func list(_ path: String) throws(FileError) -> [String]
    /// Opens (creating) `path` and takes an exclusive `flock` on it without waiting; the lock lasts
    /// until the descriptor is closed. EWOULDBLOCK when another process holds it.
    func lock(_ path: String) throws(FileError) -> Int32
    /// `access(W_OK)`: the process may create files in the directory.
    func checkWritable(_ path: String) throws(FileError)
}

extension StoreFiles {
    /// Makes a file that is already written durable: opens it, `fdatasync`, closes it.
    func sync(path: String) throws(FileError) {
        let descriptor = try open(path, O_RDONLY)
        defer { close(descriptor) }
        try sync(descriptor, path: path)
    }
}

/// The system calls themselves; each error keeps the call's name and errno.
struct SystemStoreFiles: StoreFiles {
    @discardableResult func createDirectory(_ path: String) throws(FileError) -> [String] {
        var prefix = path.hasPrefix("/") ? "" : "."
        var created: [String] = []
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) == 0 {
                created.append(prefix)
            } else if errno != EEXIST {
                throw FileError(call: "mkdir", path: prefix, code: errno)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw FileError(call: "stat", path: path, code: errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw FileError(call: "mkdir", path: path, code: ENOTDIR) }
        return created
    }

    func open(_ path: String, _ flags: Int32) throws(FileError) -> Int32 {
        while true {
            #if canImport(Glibc)
            let descriptor = Glibc.open(path, flags | O_CLOEXEC, 0o644)
            #else
            let descriptor = Darwin.open(path, flags | O_CLOEXEC, 0o644)
            #endif
            if descriptor >= 0 { return descriptor }
            if errno != EINTR { throw FileError(call: "open", path: path, code: errno) }
        }
    }

    func close(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }

    func write(_ descriptor: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(FileError) {
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw FileError(call: "pwrite", path: path, code: errno)
            }
            if written == 0 { throw FileError(call: "pwrite", path: path, code: EIO) }
            done += written
        }
    }

    func sync(_ descriptor: Int32, path: String) throws(FileError) {
        #if canImport(Glibc)
        guard fdatasync(descriptor) == 0 else { throw FileError(call: "fdatasync", path: path, code: errno) }
        #else
        guard fsync(descriptor) == 0 else { throw FileError(call: "fsync", path: path, code: errno) }
        #endif
    }

    func syncDirectory(_ path: String) throws(FileError) {
        let descriptor = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw FileError(call: "fsync", path: path, code: errno) }
    }

    func truncate(_ descriptor: Int32, to size: Int, path: String) throws(FileError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw FileError(call: "ftruncate", path: path, code: errno) }
    }

    func rename(_ from: String, to: String) throws(FileError) {
        #if canImport(Glibc)
        guard Glibc.rename(from, to) == 0 else { throw FileError(call: "rename to \(to)", path: from, code: errno) }
        #else
        guard Darwin.rename(from, to) == 0 else { throw FileError(call: "rename to \(to)", path: from, code: errno) }
        #endif
    }

    func remove(_ path: String) throws(FileError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw FileError(call: "unlink", path: path, code: errno) }
    }

    func size(_ path: String) -> Int? {
        var info = stat()
        // A regular file's only: a directory beside the log (the family members' store) is not the log's.
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : nil
    }

    func read(_ path: String) throws(FileError) -> [UInt8] {
        let descriptor = try open(path, O_RDONLY)
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileError(call: "fstat", path: path, code: errno) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError(call: "pread", path: path, code: errno)
            }
            if count == 0 { break }  // shorter than fstat said: read what is there
            done += count
        }
        return Array(bytes.prefix(done))
    }

    func list(_ path: String) throws(FileError) -> [String] {
        guard let directory = opendir(path) else { throw FileError(call: "opendir", path: path, code: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    func lock(_ path: String) throws(FileError) -> Int32 {
        let descriptor = try open(path, O_RDWR | O_CREAT)
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            throw FileError(call: "flock", path: path, code: code)
        }
        return descriptor
    }

    func checkWritable(_ path: String) throws(FileError) {
        guard access(path, W_OK) == 0 else { throw FileError(call: "access(W_OK)", path: path, code: errno) }
    }
}
