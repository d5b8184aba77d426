import DiffStream
import DiffStreamJSON
import Foundation

/// The offline cache: the last snapshot and event id of each feed, in a directory, keyed by the server
/// and the token's subject so that one user's feeds are never shown to another.
///
/// Layout: `<directory>/<key>/<feed>.json`, where `key` is 16 hex digits of an FNV-1a hash of the server
/// URL and the subject (stored in the file too, and checked on load). A file is one JSON object:
///
/// ```json
/// {"format":1,"server":"http://127.0.0.1:8080","subject":"user-42","feed":"home","history":"9f86d081884c7d65",
///  "version":7,"id":"ds1.9f86d081884c7d65.7","sections":[…]}
/// ```
///
/// A file of another `format`, or one that does not read, is ignored (the feed starts without a cache).
/// Files are written whole and renamed into place, after each update.
///
/// The subject follows the token: when the token hook gives a token of another subject (another user
/// signed in), the updates that follow are saved under that subject's key (``keyed(for:)``), never
/// under the previous user's. What is loaded at start is the subject of the client's first token.
public struct OfflineCache: Sendable {
    /// The version of the file format.
    public static let format = 1

    public let directory: URL
    public let server: String
    /// The token's subject (`sub` of a JWT), `token` for another token, `anonymous` without one.
    public private(set) var subject: String

    public init(directory: URL, server: URL, token: String?) {
        self.directory = directory
        self.server = server.absoluteString
        subject = Self.subject(of: token)
    }

    /// The same cache keyed by another token's subject (the one a token hook gave).
    public func keyed(for token: String?) -> OfflineCache {
        var cache = self
        cache.subject = Self.subject(of: token)
        return cache
    }

    /// The subject a token is cached under: a JWT's `sub` (not verified: it only keys the cache).
    static func subject(of token: String?) -> String {
        guard let token else { return "anonymous" }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecode(String(parts[1])),
              let sub = (try? JSONParser.parse(payload))?["sub"]?.stringValue else { return "token" }
        return "sub:" + sub
    }

    var folder: URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (server + "\n" + subject).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return directory.appendingPathComponent(String(repeating: "0", count: 16 - hex.count) + hex, isDirectory: true)
    }

    func file(for feed: String) -> URL { folder.appendingPathComponent(feed + ".json") }

    /// Writes what a feed holds (nothing when it holds no snapshot). Errors are ignored: the cache is
    /// an optimisation, never a reason to stop following.
    func save(feed: String, cursor: FeedCursor) {
        guard let snapshot = cursor.snapshot, let version = cursor.version, let id = cursor.eventID else { return }
        var writer = JSONWriter(capacity: 256 + snapshot.numberOfItems * 64)
        writer.raw("{\"format\":")
        writer.write(Self.format)
        writer.raw(",\"server\":")
        writer.write(server)
        writer.raw(",\"subject\":")
        writer.write(subject)
        writer.raw(",\"feed\":")
        writer.write(feed)
        if let history = cursor.history {
            writer.raw(",\"history\":")
            writer.write(history)
        }
        writer.raw(",\"version\":")
        writer.write(version)
        writer.raw(",\"id\":")
        writer.write(id)
        writer.byte(UInt8(ascii: ","))
        WireCodec.writeSections(snapshot, into: &writer)
        writer.byte(UInt8(ascii: "}"))
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try? Data(writer.bytes).write(to: file(for: feed), options: .atomic)
    }

    /// What the cache holds for a feed, if it is of this format, server and subject.
    func load(feed: String) -> FeedCursor? {
        guard let data = try? Data(contentsOf: file(for: feed)) else { return nil }
        let bytes = [UInt8](data)
        guard let header = try? JSONParser.parse(bytes, numbersBeyondDouble: .infinity),
              header["format"]?.numberValue == Double(Self.format),
              header["server"]?.stringValue == server, header["subject"]?.stringValue == subject, header["feed"]?.stringValue == feed,
              let version = header["version"]?.numberValue.flatMap(Int.init(exactly:)), let id = header["id"]?.stringValue,
              let snapshot = try? WireCodec.decodeSnapshot(bytes) else { return nil }
        return FeedCursor(cached: snapshot, history: header["history"]?.stringValue, version: version, eventID: id)
    }

    /// Removes a feed's entry.
    public func remove(feed: String) {
        try? FileManager.default.removeItem(at: file(for: feed))
    }

    static func base64URLDecode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { [UInt8]($0) }
    }
}
