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

/// Thin wrappers over the file system calls the log store makes; each error keeps the call's name and errno.
enum StoreFiles {
    static func open(_ path: String, _ flags: Int32) throws(FileError) -> Int32 {
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

    static func close(_ descriptor: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }

    /// Writes all of `bytes` at `offset` (`pwrite` until done).
    static func write(_ descriptor: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(FileError) {
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

    /// `fdatasync`: the data written so far, and the size, are on the medium.
    static func sync(_ descriptor: Int32, path: String) throws(FileError) {
        #if canImport(Glibc)
        guard fdatasync(descriptor) == 0 else { throw FileError(call: "fdatasync", path: path, code: errno) }
        #else
        guard fsync(descriptor) == 0 else { throw FileError(call: "fsync", path: path, code: errno) }
        #endif
    }

    /// `fsync` of a directory: names created, renamed or removed in it are on the medium.
    static func syncDirectory(_ path: String) throws(FileError) {
        let descriptor = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw FileError(call: "fsync", path: path, code: errno) }
    }

    static func truncate(_ descriptor: Int32, to size: Int, path: String) throws(FileError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw FileError(call: "ftruncate", path: path, code: errno) }
    }

    static func rename(_ from: String, to: String) throws(FileError) {
        #if canImport(Glibc)
        guard Glibc.rename(from, to) == 0 else { throw FileError(call: "rename to \(to)", path: from, code: errno) }
        #else
        guard Darwin.rename(from, to) == 0 else { throw FileError(call: "rename to \(to)", path: from, code: errno) }
        #endif
    }

    /// Removes a file; a file already gone is not an error.
    static func remove(_ path: String) throws(FileError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw FileError(call: "unlink", path: path, code: errno) }
    }

    static func size(_ path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    /// The whole file.
    static func read(_ path: String) throws(FileError) -> [UInt8] {
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

    /// The names in a directory (not `.` and `..`).
    static func list(_ path: String) throws(FileError) -> [String] {
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
}
