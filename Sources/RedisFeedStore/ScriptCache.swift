import Synchronization

/// The SHA-1 Redis gave each script at `SCRIPT LOAD`, by the script's name (``RedisScripts``' names are
/// unique; hashing a name per commit is cheaper than hashing the script), shared by a committer's copies.
final class ScriptCache: Sendable {
    private let shas = Mutex<[String: String]>([:])

    func sha(of name: String) -> String? { shas.withLock { $0[name] } }
    func remember(_ sha: String, for name: String) { shas.withLock { $0[name] = sha } }
    func forget(_ name: String) { _ = shas.withLock { $0.removeValue(forKey: name) } }
}
