import Redis
import Synchronization

extension RedisStore {
    /// Renews an instance's liveness and agrees on the settings again (``RedisScripts/agree``); reports
    /// a difference once, when it first appears.
    package final class LivenessRenewal: Sendable {
        let client: RedisClient
        let command: [[UInt8]]
        let settings: [(name: String, value: String)]
        let keys: RedisKeys
        let onSettingsConflict: @Sendable ([String]) -> Void
        /// The difference last reported (none yet: empty).
        private let reported = Mutex<[String]>([])

        init(client: RedisClient, command: [[UInt8]], settings: [(name: String, value: String)], keys: RedisKeys, onSettingsConflict: @escaping @Sendable ([String]) -> Void) {
            self.client = client
            self.command = command
            self.settings = settings
            self.keys = keys
            self.onSettingsConflict = onSettingsConflict
        }

        /// One renewal: a failed call is tried again at the next.
        package func renew() async {
            guard let reply = try? await client.command(command), let differing = try? RedisStore.differences(reply, settings: settings, keys: keys) else { return }
            let changed = reported.withLock { reported in
                defer { reported = differing }
                return reported != differing
            }
            if changed && !differing.isEmpty { onSettingsConflict(differing) }
        }
    }
}
