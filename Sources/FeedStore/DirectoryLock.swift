import Foundation
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
    private var descriptor: Int32?

    /// - Throws: ``StoreError/directory(path:reason:)`` when it cannot be created, opened or written;
    ///   ``StoreError/locked(path:)`` when another process holds it.
    init(directory: String) throws(StoreError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .directory(path: directory, reason: "cannot create it (\((error as NSError).localizedDescription))")
        }
        let lockPath = directory + "/" + Self.fileName
        let descriptor: Int32
        do { descriptor = try StoreFiles.open(lockPath, O_RDWR | O_CREAT) } catch { throw .directory(path: directory, reason: error.description) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            StoreFiles.close(descriptor)
            if code == EWOULDBLOCK { throw .locked(path: directory) }
            throw .directory(path: directory, reason: "flock(\(lockPath)): \(String(cString: strerror(code)))")
        }
        guard access(directory, W_OK) == 0 else {
            let code = errno
            StoreFiles.close(descriptor)
            throw .directory(path: directory, reason: "access(W_OK): \(String(cString: strerror(code)))")
        }
        self.descriptor = descriptor
    }

    deinit { release() }

    /// Lets another process take the directory.
    func release() {
        if let descriptor { StoreFiles.close(descriptor) }
        descriptor = nil
    }
}
