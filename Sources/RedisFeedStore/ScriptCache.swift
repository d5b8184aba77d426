import Synchronization

/// The SHA-1 Redis gave each script at `SCRIPT LOAD`, shared by the copies of a committer.
final class ScriptCache: Sendable {
    private let shas = Mutex<[String: String]>([:])

    func sha(of script: String) -> String? { shas.withLock { $0[script] } }
    func remember(_ sha: String, for script: String) { shas.withLock { $0[script] = sha } }
    func forget(_ script: String) { _ = shas.withLock { $0.removeValue(forKey: script) } }
}
