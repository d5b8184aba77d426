#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The data directory, created if needed and locked (`flock` on `diffstream.lock`) against a second
/// process for as long as this value lives or until ``release()``.
final class DirectoryLock {
    static let fileName = "diffstream.lock"
    let directory: String
    private let files: any StoreFiles
    private var descriptor: Int32?

    /// - Throws: ``StoreError/directory(path:reason:)`` when it cannot be created, opened or written;
    ///   ``StoreError/locked(path:)`` when another process holds it.
    init(directory: String, files: any StoreFiles = SystemStoreFiles()) throws(StoreError) {
        self.directory = directory
        self.files = files
        do {
            // Each name it made, in its parent, is durable before anything in it is (POSIX: a
            // directory's fsync): the data directory's, and those of parents it made on the way.
            for made in try files.createDirectory(directory) { try files.syncDirectory(Self.parent(of: made)) }
        } catch {
            throw .directory(path: directory, reason: "cannot create it (\(error.description))")
        }
        let descriptor: Int32
        do {
            descriptor = try files.lock(directory + "/" + Self.fileName)
        } catch where error.code == EWOULDBLOCK {
            throw .locked(path: directory)
        } catch {
            throw .directory(path: directory, reason: error.description)
        }
        do {
            try files.checkWritable(directory)
        } catch {
            files.close(descriptor)
            throw .directory(path: directory, reason: error.description)
        }
        self.descriptor = descriptor
    }

    /// The directory holding `path` (`/` for a name at the root, `.` for a relative one with no `/`).
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        let parent = trimmed[..<slash]
        return parent.isEmpty ? "/" : String(parent)
    }

    deinit { release() }

    /// Lets another process take the directory.
    func release() {
        if let descriptor { files.close(descriptor) }
        descriptor = nil
    }
}
