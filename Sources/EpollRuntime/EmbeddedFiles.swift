import HTTPCore

/// Files held in memory, served under a path prefix: the browser library and the demo page built into
/// the binary (`PublicFiles`). Each file is fingerprinted and, when compressible and 1 KiB or more,
/// gzipped once, at creation; `If-None-Match` is answered `304` (RFC 9110 §13.1.2).
public final class EmbeddedFiles: StaticContent {
    struct File: Sendable {
        var type: String
        var bytes: [UInt8]
        var etag: String
        var gzip: [UInt8]?
    }

    /// The path every file is under, ending in `/` (`/` for the page, `/_diffstream/<version>/`).
    public let prefix: String
    private let files: [String: File]
    private let headers: HTTPHeaders

    /// - Parameters:
    ///   - files: each file's bytes by name (a name has no `/`).
    ///   - prefix: the path the names are under; a request for the prefix alone gets `index.html`.
    ///   - headers: added to every answer (`Cache-Control`, `Access-Control-Allow-Origin`).
    /// - Complexity: O(n) in the files' total size (a fingerprint and a gzip each).
    public init(files: [String: [UInt8]], prefix: String, headers: HTTPHeaders) {
        self.prefix = prefix.hasSuffix("/") ? prefix : prefix + "/"
        self.headers = headers
        self.files = files.reduce(into: [:]) { result, entry in
            let type = StaticFiles.mimeType(for: entry.key)
            let bytes = entry.value
            let gzip = PreparedResponse.isCompressible(type) && bytes.count >= 1024 ? Gzip.compress(bytes, level: 9) : nil
            result[entry.key] = File(type: type, bytes: bytes, etag: "\"\(StaticFiles.fingerprint(bytes))\"", gzip: gzip)
        }
    }

    /// The file a request names, or nil when it is not under the prefix or no file has that name.
    public func response(for request: HTTPRequest, compression: Bool) -> HTTPResponse? {
        guard request.rawPath.hasPrefix(prefix) else { return nil }
        var name = String(request.rawPath.dropFirst(prefix.count))
        if name.isEmpty { name = "index.html" }
        guard let file = files[name] else { return nil }
        var headers = self.headers
        headers.set("Content-Type", file.type)
        return StaticFiles.answer(bytes: file.bytes, gzip: file.gzip, type: file.type, etag: file.etag, headers: headers,
                                  request: request, compression: compression)
    }
}
