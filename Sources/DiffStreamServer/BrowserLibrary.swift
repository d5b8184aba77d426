import Foundation
import EpollRuntime

/// The browser library built into the binary (`PublicFiles`), served by every server at
/// `/_diffstream/<version>/<module>` with `Cache-Control: public, max-age=31536000, immutable` (the version
/// is a hash of the modules, so a path's bytes never change) and `Access-Control-Allow-Origin: *` (module
/// scripts from another origin need it). `/_diffstream/current/<module>` redirects (`302`, not cached) to
/// the versioned path, so a page that imports from there follows upgrades; its relative imports then
/// resolve under the versioned path.
struct BrowserLibrary: StaticContent {
    static let path = "/_diffstream/\(PublicFiles.version)/"
    static let currentPath = "/_diffstream/current/"

    /// Every file of Public/ as it was built, decoded once.
    static let decoded: [String: [UInt8]] = PublicFiles.base64.mapValues { text in
        Array(Data(base64Encoded: text, options: .ignoreUnknownCharacters) ?? Data())
    }

    /// The library's modules under ``path``.
    static let modules = EmbeddedFiles(
        files: decoded.filter { PublicFiles.library.contains($0.key) }, prefix: path,
        headers: ["Cache-Control": "public, max-age=31536000, immutable", "Access-Control-Allow-Origin": "*"])

    /// The whole page at `/` (``Server/Configuration/servesBuiltInPage``), revalidated on each use.
    static let builtInPage = EmbeddedFiles(files: decoded, prefix: "/", headers: ["Cache-Control": "no-cache"])

    func response(for request: HTTPRequest, compression: Bool) -> HTTPResponse? {
        if request.rawPath.hasPrefix(Self.currentPath) {
            let name = String(request.rawPath.dropFirst(Self.currentPath.count))
            guard PublicFiles.library.contains(name) else { return nil }
            return HTTPResponse(status: HTTPStatus(302, "Found"), headers: [
                "Location": Self.path + name, "Cache-Control": "no-cache", "Access-Control-Allow-Origin": "*",
            ])
        }
        return Self.modules.response(for: request, compression: compression)
    }
}
