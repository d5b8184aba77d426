#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Serves the files of one directory (the page in `Public/`), safely.
///
/// - Only regular files under the root are served. `..` and `.` segments, hidden files, encoded
///   slashes or backslashes (`%2f`, `%5c`), NUL bytes, and symbolic links that lead outside the root all
///   answer 404, after the path is resolved with `realpath`.
/// - `/` and directories serve their `index.html`.
/// - Each file gets a strong ETag from its content; `If-None-Match` answers 304. Compressible files are
///   gzipped once and cached (the gzip variant has its own ETag); the cache entry is dropped when the
///   file's size, modification time or inode changes.
public final class StaticFiles: StaticContent {
    /// The folder served (files outside it are never served).
    public let root: String
    private let cache = Mutex<[String: CachedFile]>([:])
    /// Files larger than this are not served (the page's files are small).
    public let maximumFileSize = 16 * 1024 * 1024

    struct CachedFile: Sendable {
        var stamp: FileStamp
        var bytes: [UInt8]
        var etag: String
        var gzip: [UInt8]?
    }

    struct FileStamp: Equatable, Sendable {
        var size: Int
        var modified: Int
        var modifiedNanos: Int
        var inode: UInt64
    }

    /// Fails if the root does not exist or is not a directory.
    public init(root: String) throws(SystemError) {
        guard let resolved = realpath(root, nil) else { throw SystemError("realpath(\(root))", errno: errno) }
        defer { free(resolved) }
        var info = stat()
        guard stat(resolved, &info) == 0 else { throw SystemError("stat(\(root))", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw SystemError("opendir(\(root))", errno: ENOTDIR) }
        self.root = String(decoding: UnsafeRawBufferPointer(start: resolved, count: strlen(resolved)), as: UTF8.self)
    }

    /// The response for a GET of `request`, or nil if no file matches (the caller answers 404).
    public func response(for request: HTTPRequest, compression: Bool) -> HTTPResponse? {
        guard let file = resolve(rawPath: request.rawPath), let cached = load(file) else { return nil }
        let type = Self.mimeType(for: file)
        return Self.answer(bytes: cached.bytes, gzip: cached.gzip, type: type, etag: "\"\(cached.etag)\"",
                           headers: ["Content-Type": type, "Cache-Control": "no-cache"], request: request, compression: compression)
    }

    /// A file's answer to `request`, for the static and the embedded files alike: the gzipped bytes (and
    /// the gzip variant's tag) when the type compresses and the client takes gzip, `Vary`, the `ETag`, and
    /// `304` when `If-None-Match` names the tag (RFC 9110 §13.1.2).
    /// - Parameter headers: the answer's own fields (`Content-Type` among them).
    static func answer(bytes: [UInt8], gzip: [UInt8]?, type: String, etag: String, headers: HTTPHeaders,
                       request: HTTPRequest, compression: Bool) -> HTTPResponse {
        var headers = headers
        var body = bytes
        var etag = etag
        if PreparedResponse.isCompressible(type) {
            headers.add("Vary", "Accept-Encoding")
            if compression, Gzip.isAccepted(by: request.headers["Accept-Encoding"]), let gzip {
                body = gzip
                etag = EntityTag.gzipVariant(of: etag)
                headers.add("Content-Encoding", "gzip")
            }
        }
        headers.add("ETag", etag)
        if let field = request.headers["If-None-Match"], EntityTag.match(ifNoneMatch: field, among: [etag]) != nil {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        return HTTPResponse(status: .ok, headers: headers, body: body)
    }

    /// The absolute path of the file a raw (percent-encoded) request path names, if it is safe.
    func resolve(rawPath: String) -> String? {
        let lowered = rawPath.lowercased()
        if lowered.contains("%2f") || lowered.contains("%5c") || lowered.contains("%00") { return nil }
        guard let decoded = PercentDecoding.decode(rawPath), !decoded.contains("\0"), !decoded.contains("\\") else { return nil }
        let segments = decoded.split(separator: "/", omittingEmptySubsequences: true)
        for segment in segments where segment.hasPrefix(".") { return nil }  // "..", ".", hidden files
        var candidate = root + "/" + segments.joined(separator: "/")
        if isDirectory(candidate) { candidate += (candidate.hasSuffix("/") ? "" : "/") + "index.html" }
        guard let real = realpath(candidate, nil) else { return nil }
        defer { free(real) }
        let resolved = String(decoding: UnsafeRawBufferPointer(start: real, count: strlen(real)), as: UTF8.self)
        guard resolved.hasPrefix(root + "/") else { return nil }  // a symlink out of the root
        return resolved
    }

    private func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    private func load(_ path: String) -> CachedFile? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) <= maximumFileSize else { return nil }
        let stamp = FileStamp(size: Int(info.st_size), modified: Int(info.st_mtim.tv_sec), modifiedNanos: Int(info.st_mtim.tv_nsec), inode: UInt64(info.st_ino))
        if let cached = cache.withLock({ $0[path] }), cached.stamp == stamp { return cached }
        guard let bytes = Self.readFile(path) else { return nil }
        let etag = Self.fingerprint(bytes)
        let gzip = PreparedResponse.isCompressible(Self.mimeType(for: path)) && bytes.count >= 1024 ? Gzip.compress(bytes, level: 9) : nil
        let entry = CachedFile(stamp: stamp, bytes: bytes, etag: etag, gzip: gzip)
        cache.withLock { $0[path] = entry }
        return entry
    }

    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR { continue } else { return nil } }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// A 64-bit FNV-1a hash of the content with its length, as hex: enough to tell versions apart.
    static func fingerprint(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01B3
        }
        return String(hash, radix: 16) + "-" + String(bytes.count, radix: 16)
    }

    static let mimeTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
        "js": "application/javascript; charset=utf-8", "mjs": "application/javascript; charset=utf-8",
        "json": "application/json", "txt": "text/plain; charset=utf-8", "svg": "image/svg+xml", "png": "image/png",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "ico": "image/x-icon",
        "woff2": "font/woff2", "map": "application/json", "webmanifest": "application/manifest+json",
    ]

    static func mimeType(for path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        return mimeTypes[name[name.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }
}
